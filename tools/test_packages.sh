#!/usr/bin/env bash
# `make test`'s set-up of the system packages the suite needs: Debian's chromium (the browser
# test drives it through Playwright) and postgresql (a real server for the PostgreSQL tests).
# Installs what is missing once, with apt-get, when it can (root); otherwise one line naming the
# packages and the command, and exit 2 -- never a suite that errors or skips them silently.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" > /dev/null || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get > /dev/null; then
  echo "error: the tests need Debian's ${missing[*]}, which is not installed (system" \
       "packages): run 'sudo apt-get install ${missing[*]}', then make test again" >&2
  exit 2
fi
echo "make test: installing ${missing[*]} with apt-get (the browser and PostgreSQL tests need them)" >&2
log=$(mktemp)
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
       apt-get install -y -qq "${missing[@]}"; } > "$log" 2>&1; then
  echo "error: apt-get could not install ${missing[*]} (system packages; its log: $log):" \
       "run 'apt-get install ${missing[*]}' to see why, then make test again" >&2
  exit 2
fi
rm -f "$log"
