#!/usr/bin/env bash
# ci-java.sh: install, with Debian's packages, what the Java client (clients/java) needs to
# build and test offline: JDK 17, Maven, and the artifacts its pom names in Debian's Maven
# repository (/usr/share/maven-repo): Jackson, JUnit 5, pgjdbc, sqlite-jdbc and the compiler,
# surefire, jar and resources plugins. Idempotent: quiet when everything is there. Progress
# messages go to stderr; nothing is printed on stdout.
set -euo pipefail

log() { echo "ci-java: $*" >&2; }
source "$(dirname "$0")/lib/apt.sh"

# package -> a file it installs (checked instead of dpkg, which is slower and may be absent)
declare -A want=(
	[openjdk-17-jdk-headless]=/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture 2>/dev/null || echo amd64)/bin/javac
	[maven]=/usr/share/maven/bin/mvn
	[junit5]=/usr/share/maven-repo/org/junit/jupiter/junit-jupiter/debian
	[libjackson2-databind-java]=/usr/share/maven-repo/com/fasterxml/jackson/core/jackson-databind/2.x
	[libpostgresql-jdbc-java]=/usr/share/maven-repo/org/postgresql/postgresql/debian
	[libxerial-sqlite-jdbc-java]=/usr/share/maven-repo/org/xerial/sqlite-jdbc/debian
	[libmaven-compiler-plugin-java]=/usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin/3.10.1
	[libsurefire-java]=/usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/2.22.3
	[libmaven-jar-plugin-java]=/usr/share/maven-repo/org/apache/maven/plugins/maven-jar-plugin/3.3.0
	[libmaven-resources-plugin-java]=/usr/share/maven-repo/org/apache/maven/plugins/maven-resources-plugin/3.3.0
)
missing=()
for p in "${!want[@]}"; do
	[[ -e "${want[$p]}" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
apt_install "${missing[*]}" "${missing[@]}"
