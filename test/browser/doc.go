// Package browser tests the dashboard (/ui/) in a real browser: headless Chromium from the
// distribution's packages, driven with chromedp, against a cluster of three `raftlock
// serve` processes. It is a package of its own so that only it waits for a browser.
//
// The test skips, loudly, when no Chromium is installed, except in CI (the CI variable is
// set), where a missing browser fails it: .ci/run installs Debian's chromium package.
// RAFTLOCK_CHROMIUM names the browser binary; RAFTLOCK_SCREENSHOTS a folder for the
// screenshots (by default a temporary one, printed by the test).
package browser
