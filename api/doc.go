// Package api holds the request and response types of raftlock's HTTP JSON API (v1), the
// error codes it answers with, and the validation rules for names and durations.
//
// It is the one package that both the server (transport) and the Go client import, so that
// a worker or a storage owner can depend on the client alone without pulling in a server.
// The catalogue of the error outcomes it answers with is outcomes.go (each code's status,
// retry class and message), and outcomes.json the same for the clients in other languages.
//
// It imports nothing of the project.
package api
