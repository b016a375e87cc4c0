#!/usr/bin/env bash
# Every test layer against a throwaway stack in .state/test (ports 8543 and
# 8180, so a running dev stack is left alone): swift test (units and
# in-process tests), then the end-to-end tests in Tests/EndToEnd if any.
# Exits non-zero when a step fails.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# Ports can be moved (TEST_HTTPS_PORT, TEST_HTTP_PORT) so that several checkouts test at once.
export STATE=$repo/.state/test HTTPS_PORT=${TEST_HTTPS_PORT:-8543} HTTP_PORT=${TEST_HTTP_PORT:-8180}
# The workers mail through a sink that keeps the messages in $STATE/mail (stack.sh); its
# port follows the HTTP port unless TEST_SMTP_PORT says otherwise.
export SMTP_SINK_PORT=${TEST_SMTP_PORT:-$((HTTP_PORT + 25))}
stack=$repo/Deploy/dev/stack.sh
# Two nginx instances sharing the ports (stack.sh NGINX_INSTANCES): every test then runs
# against the harder case, streams on either instance (Tests/EndToEnd/test_events_instances.py).
export NGINX_INSTANCES=${NGINX_INSTANCES:-2}

# A previous run may have died without cleaning up.
[[ ! -d $STATE ]] || "$stack" down >/dev/null
rm -rf "$STATE"
trap '"$stack" down >/dev/null' EXIT

declare -a summary
failed=0
step() { # step <name> <command...>
    local name=$1
    shift
    printf '\n=== %s\n' "$name"
    if "$@"; then
        summary+=("PASS  $name")
    else
        summary+=("FAIL  $name")
        failed=1
    fi
}

step "stack up" "$stack" up
if ((failed == 0)); then
    superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
    export TIDEWAY_TEST_ADMIN_DATABASE="host=$STATE/run dbname=tideway user=$superuser"
    export TIDEWAY_TEST_DATABASE="host=$STATE/run dbname=tideway user=tideway_worker"
    export TIDEWAY_TEST_URL=https://localhost:$HTTPS_PORT
    export TIDEWAY_TEST_CA=$STATE/tls/ca.crt
    export TIDEWAY_TEST_STATE=$STATE

    step "swift test" swift test
    # Debian's python3: its selenium is installed for it, not for pyenv's.
    if compgen -G 'Tests/EndToEnd/test_*.py' >/dev/null || compgen -G 'Tests/EndToEnd/*_test.py' >/dev/null; then
        step "end to end (pytest)" /usr/bin/python3 -m pytest -q Tests/EndToEnd
    else
        summary+=("SKIP  end to end: no tests in Tests/EndToEnd yet")
    fi
fi

printf '\n=== summary\n'
printf '%s\n' "${summary[@]}"
exit "$failed"
