# Sourced by tools/test: a private PostgreSQL server for the suite, on loopback, in a temporary
# directory, stopped and removed when the script exits.
#   ensure_postgres   installs PostgreSQL (Debian: postgresql) when its binaries are missing
#   start_postgres    starts the server and exports WORKFLOW_TEST_POSTGRES (a postgres:// URL);
#                     without fsync unless WORKFLOW_POSTGRES_FSYNC=on (benchmarks keep it)
#   stop_postgres     stops it (start_postgres also arranges this at exit)

ensure_postgres() {
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$PGBIN" ] && [ -x "$PGBIN/pg_ctl" ]; then return 0; fi
    echo "==> PostgreSQL is missing: installing it with apt-get"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
}

# Runs a PostgreSQL binary as the server's owner: `postgres` when we are root (the server refuses
# to run as root), else ourselves.
_as_pg_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
    ensure_postgres
    PGROOT=$(mktemp -d /tmp/workflow-postgres.XXXXXX)
    chmod 755 "$PGROOT"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$PGROOT"; fi
    # The suite kills engine processes, never the database: a server without fsync loses nothing
    # the tests rely on, and starts in about a second.
    PGSYNC="-c fsync=off"
    [ "${WORKFLOW_POSTGRES_FSYNC:-off}" = "on" ] && PGSYNC=""
    _as_pg_owner "$PGBIN/initdb" -D "$PGROOT/data" -U postgres --auth=trust --no-sync -E UTF8 >"$PGROOT/initdb.log" 2>&1 ||
        { cat "$PGROOT/initdb.log" >&2; return 1; }
    local attempt
    for attempt in 1 2 3 4 5; do
        PGPORT=$((20000 + RANDOM % 20000))
        if _as_pg_owner "$PGBIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/server.log" -w -t 30 -o \
            "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGROOT $PGSYNC -c max_connections=200" start >/dev/null; then
            trap stop_postgres EXIT
            _write_postgres_ctl
            export WORKFLOW_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PGPORT/postgres"
            export WORKFLOW_TEST_POSTGRES_CTL="$PGROOT/ctl"
            # The failover test makes a primary and standby of its own with this script.
            export WORKFLOW_TEST_POSTGRES_PAIR="$PWD/tools/lib/postgres-pair"
            echo "==> PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') for the tests at $WORKFLOW_TEST_POSTGRES"
            return 0
        fi
    done
    echo "error: the test PostgreSQL server did not start; its log:" >&2
    cat "$PGROOT/server.log" >&2
    return 1
}

# $PGROOT/ctl stop|start: the tests stop the server as a crash would (immediate: no checkpoint,
# WAL recovery at the next start) and start it again on the same port.
_write_postgres_ctl() {
    local runas=""
    if [ "$(id -u)" -eq 0 ]; then runas="runuser -u postgres --"; fi
    cat >"$PGROOT/ctl" <<EOF
#!/usr/bin/env bash
set -e
case "\$1" in
    stop) $runas "$PGBIN/pg_ctl" -D "$PGROOT/data" -m immediate stop >/dev/null ;;
    start) $runas "$PGBIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/server.log" -w -t 30 -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGROOT $PGSYNC -c max_connections=200" start >/dev/null ;;
    *) echo "usage: \$0 stop|start" >&2; exit 2 ;;
esac
EOF
    chmod 755 "$PGROOT/ctl"
}

stop_postgres() {
    if [ -n "${PGROOT:-}" ] && [ -d "$PGROOT/data" ]; then
        _as_pg_owner "$PGBIN/pg_ctl" -D "$PGROOT/data" -m fast stop >/dev/null 2>&1 || true
        rm -rf "$PGROOT"
    fi
}
