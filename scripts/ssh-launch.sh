#!/usr/bin/env bash
# Keima distributed training over ssh: the coordinator on this machine (or on a given
# host), one `keima worker` per line of a hosts file. See docs/cluster.md.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage:
  scripts/ssh-launch.sh start --hosts FILE --run-dir DIR [--config FILE] [options]
  scripts/ssh-launch.sh stop   [--state DIR] [--wait SECONDS]
  scripts/ssh-launch.sh status [--state DIR]

start   Starts the coordinator (a new run from --config, or `--resume` when the run
        directory already holds a checkpoint), waits until it listens, then starts one
        worker per hosts-file line over ssh. The token reaches the workers in their
        environment (KEIMA_TOKEN), sent through ssh's standard input: it never appears on
        a command line.
stop    SIGTERM to every worker (each returns its lease), then to the coordinator, which
        checkpoints and exits; continue later with `start` and the same --run-dir.
status  Which processes are alive, and the coordinator's counters (`keima status`).

Options of start:
  --hosts FILE             one worker per line: `host [threads]`; host is an ssh destination
                           (node3, user@10.0.0.7); threads default to all CPUs of the host;
                           `#` starts a comment. A host may appear on several lines.
  --run-dir DIR            the run directory on the coordinator's machine (relative paths
                           are taken from --workdir there)
  --config FILE            train config for a new run (ignored when DIR has a checkpoint)
  --coordinator-host HOST  run the coordinator on HOST over ssh (default: this machine)
  --address ADDR           name or IP of the coordinator as the workers reach it
                           (default: HOST without user@, or `hostname -f` of this machine)
  --port PORT              gRPC port of the coordinator (default 7470; open it to the workers)
  --metrics-listen ADDR    passed on to `keima train --metrics-listen` (e.g. 0.0.0.0:7471)
  --token-file FILE        the run's token on the coordinator's machine (default
                           RUN_DIR/token, written by the coordinator unless the config sets
                           token or token_file)
  --tls-ca PEM             CA certificate, at this path on every worker: use https (the
                           config must set tls_cert/tls_key for a certificate naming ADDR)
  --keima PATH             the keima binary on every host (default: keima from PATH)
  --workdir DIR            working directory on every host (default: the current directory
                           for a local coordinator, the login directory over ssh); relative
                           [teacher]/[records] paths of the config are resolved there
  --wait SECONDS           how long to wait for the coordinator to listen (default 900)
Common options:
  --state DIR              where this script keeps its pid lists (default: ./.keima-ssh)
  -h, --help               this text
Environment:
  KEIMA_SSH                the ssh command (default: ssh -o BatchMode=yes)

Logs: the coordinator's in RUN_DIR/logs/coordinator.log, each worker's in
keima-logs/worker-NAME.log under the worker's working directory.
EOF
}

die() {
    echo "ssh-launch: $*" >&2
    exit 1
}

read -r -a SSH_CMD <<<"${KEIMA_SSH:-ssh -o BatchMode=yes}"

# run_on HOST SCRIPT: runs SCRIPT with bash on HOST ("" = this machine). The script goes
# through standard input, so nothing in it (the token) shows up in a process list.
run_on() {
    local host=$1 script=$2
    if [ -z "$host" ]; then
        printf '%s\n' "$script" | bash -s
    else
        printf '%s\n' "$script" | "${SSH_CMD[@]}" "$host" bash -s
    fi
}

# q VALUE: VALUE quoted for the generated scripts.
q() {
    printf '%q' "$1"
}

where() {
    if [ -z "$1" ]; then echo "this machine"; else echo "$1"; fi
}

# A remote snippet: is PID our keima process (same pid, command line with WORD)?
# shellcheck disable=SC2016  # expanded on the remote side
is_ours_fn='is_ours() { [ -r "/proc/$1/cmdline" ] && case " $(tr "\0" " " <"/proc/$1/cmdline")" in *keima*" $2 "*) true ;; *) false ;; esac; }'

STATE=${KEIMA_SSH_STATE:-$PWD/.keima-ssh}

# ---------------------------------------------------------------- state files

save_state() {
    mkdir -p "$STATE"
    {
        echo "coordinator_host=$COORD_HOST"
        echo "coordinator_pid=$COORD_PID"
        echo "run_dir=$RUN_DIR"
        echo "url=$URL"
        echo "port=$PORT"
        echo "token_file=$TOKEN_FILE"
        echo "tls_ca=$TLS_CA"
        echo "keima=$KEIMA"
        echo "workdir=$WORKDIR"
    } >"$STATE/run"
    : >"$STATE/workers"
}

load_state() {
    [ -f "$STATE/run" ] || die "no launch recorded in $STATE (start one, or pass --state)"
    local k v
    while IFS='=' read -r k v; do
        case $k in
            coordinator_host) COORD_HOST=$v ;;
            coordinator_pid) COORD_PID=$v ;;
            run_dir) RUN_DIR=$v ;;
            url) URL=$v ;;
            port) PORT=$v ;;
            token_file) TOKEN_FILE=$v ;;
            tls_ca) TLS_CA=$v ;;
            keima) KEIMA=$v ;;
            workdir) WORKDIR=$v ;;
        esac
    done <"$STATE/run"
}

# ---------------------------------------------------------------- start

cmd_start() {
    local hosts_file="" config="" address="" metrics="" metrics_set=0 wait_s=900 workdir=""
    COORD_HOST="" RUN_DIR="" PORT=7470 TOKEN_FILE="" TLS_CA="" KEIMA=keima WORKDIR=""
    while [ $# -gt 0 ]; do
        case $1 in
            --hosts) hosts_file=${2:?--hosts needs a file}; shift 2 ;;
            --run-dir) RUN_DIR=${2:?--run-dir needs a directory}; shift 2 ;;
            --config) config=${2:?--config needs a file}; shift 2 ;;
            --coordinator-host) COORD_HOST=${2:?--coordinator-host needs a host}; shift 2 ;;
            --address) address=${2:?--address needs a name}; shift 2 ;;
            --port) PORT=${2:?--port needs a number}; shift 2 ;;
            --metrics-listen) metrics=${2?--metrics-listen needs an address}; metrics_set=1; shift 2 ;;
            --token-file) TOKEN_FILE=${2:?--token-file needs a file}; shift 2 ;;
            --tls-ca) TLS_CA=${2:?--tls-ca needs a file}; shift 2 ;;
            --keima) KEIMA=${2:?--keima needs a path}; shift 2 ;;
            --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
            --wait) wait_s=${2:?--wait needs seconds}; shift 2 ;;
            --state) STATE=${2:?--state needs a directory}; shift 2 ;;
            -h | --help) usage; exit 0 ;;
            *) die "start: unknown option '$1' (see --help)" ;;
        esac
    done
    [ -n "$hosts_file" ] || die "start: --hosts FILE is required"
    [ -f "$hosts_file" ] || die "start: hosts file $hosts_file: no such file"
    [ -n "$RUN_DIR" ] || die "start: --run-dir DIR is required"
    case $PORT in '' | *[!0-9]*) die "start: --port must be a number, not '$PORT'" ;; esac
    case $wait_s in '' | *[!0-9]*) die "start: --wait must be a number of seconds" ;; esac
    # WORKDIR: the coordinator's working directory (recorded for status); workdir: the
    # workers' (empty = their login directory).
    WORKDIR=$workdir
    if [ -z "$COORD_HOST" ]; then
        # A local coordinator: its paths are relative to here unless --workdir says otherwise.
        WORKDIR=${WORKDIR:-$PWD}
        if [ -n "$config" ] && [ "$config" != quickstart ]; then
            case $config in /*) ;; *) config=$WORKDIR/$config ;; esac
            [ -f "$config" ] || die "start: config $config: no such file"
        fi
    fi

    # The hosts file, checked before anything starts.
    local -a w_host=() w_threads=()
    local line n=0 h t rest
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        line=${line%%#*}
        read -r h t rest <<<"$line" || true
        [ -n "${h:-}" ] || continue
        [ -z "${rest:-}" ] || die "$hosts_file line $n: expected 'host [threads]', got '$line'"
        if [ -n "${t:-}" ]; then
            case $t in *[!0-9]* | 0) die "$hosts_file line $n: threads must be a positive number, not '$t'" ;; esac
        fi
        w_host+=("$h")
        w_threads+=("${t:-}")
    done <"$hosts_file"
    [ "${#w_host[@]}" -gt 0 ] || die "$hosts_file lists no hosts"

    if [ -f "$STATE/run" ]; then
        (
            load_state
            [ -n "$COORD_PID" ] || exit 1
            run_on "$COORD_HOST" "$is_ours_fn; is_ours $(q "$COORD_PID") train" >/dev/null 2>&1
        ) && die "a coordinator started from $STATE still runs: '$0 stop' first (or another --state)"
    fi

    # The coordinator: resume when the run directory holds a complete checkpoint.
    local script out
    script=$(
        cat <<EOF
set -euo pipefail
KEIMA=$(q "$KEIMA"); RUN_DIR=$(q "$RUN_DIR"); CONFIG=$(q "$config"); PORT=$(q "$PORT")
WORKDIR=$(q "$WORKDIR"); TOKEN_FILE=$(q "$TOKEN_FILE"); WAIT=$(q "$wait_s")
METRICS=$(q "$metrics"); METRICS_SET=$metrics_set
$is_ours_fn
[ -z "\$WORKDIR" ] || cd "\$WORKDIR" || { echo "no directory \$WORKDIR on \$(hostname)" >&2; exit 2; }
command -v "\$KEIMA" >/dev/null 2>&1 || { echo "\$KEIMA: not found on \$(hostname) (--keima)" >&2; exit 2; }
case \$RUN_DIR in /*) ;; *) RUN_DIR=\$PWD/\$RUN_DIR ;; esac
TOKEN_FILE=\${TOKEN_FILE:-\$RUN_DIR/token}
case \$TOKEN_FILE in /*) ;; *) TOKEN_FILE=\$PWD/\$TOKEN_FILE ;; esac
resume=0
for d in "\$RUN_DIR"/checkpoints/ckpt-*; do
    case \$d in *.tmp) continue ;; esac
    if [ -f "\$d/state.json" ]; then resume=1; break; fi
done
args=(--local-workers 0 --listen "0.0.0.0:\$PORT" --quiet)
[ "\$METRICS_SET" = 0 ] || args+=(--metrics-listen "\$METRICS")
if [ "\$resume" = 1 ]; then
    args=(--resume "\$RUN_DIR" "\${args[@]}")
else
    [ -n "\$CONFIG" ] || { echo "\$RUN_DIR holds no checkpoint to continue: give --config for a new run" >&2; exit 2; }
    if [ -e "\$RUN_DIR/weights.kw" ]; then
        echo "\$RUN_DIR holds weights.kw but no complete checkpoint (the run stopped before its first one): move it aside or use another --run-dir" >&2
        exit 2
    fi
    args=(--config "\$CONFIG" --run-dir "\$RUN_DIR" "\${args[@]}")
fi
mkdir -p "\$RUN_DIR/logs"
log=\$RUN_DIR/logs/coordinator.log
rm -f "\$RUN_DIR/coordinator.url"
echo "=== \$(date -u +%FT%TZ) keima train \${args[*]}" >>"\$log"
nohup "\$KEIMA" train "\${args[@]}" >>"\$log" 2>&1 </dev/null &
pid=\$!
waited=0
while [ ! -s "\$RUN_DIR/coordinator.url" ] || [ ! -s "\$TOKEN_FILE" ]; do
    if ! kill -0 "\$pid" 2>/dev/null; then
        echo "the coordinator exited before it listened; the end of \$log:" >&2
        tail -n 15 "\$log" >&2
        exit 3
    fi
    if [ "\$waited" -ge "\$WAIT" ]; then
        [ -s "\$RUN_DIR/coordinator.url" ] && echo "no token in \$TOKEN_FILE (--token-file)" >&2
        echo "the coordinator (pid \$pid) did not come up within \$WAIT s; see \$log" >&2
        kill -TERM "\$pid" 2>/dev/null || true
        exit 3
    fi
    sleep 1
    waited=\$((waited + 1))
done
url=\$(cat "\$RUN_DIR/coordinator.url")
echo "\$pid \${url##*:} \$resume \$RUN_DIR"
echo "\$TOKEN_FILE"
EOF
    )
    echo "ssh-launch: starting the coordinator on $(where "$COORD_HOST") (run directory $RUN_DIR)"
    out=$(run_on "$COORD_HOST" "$script") || die "the coordinator did not start on $(where "$COORD_HOST")"
    local resumed
    {
        read -r COORD_PID PORT resumed RUN_DIR
        read -r TOKEN_FILE
    } <<<"$out"
    [ -n "${TOKEN_FILE:-}" ] || die "unexpected answer from $(where "$COORD_HOST"): $out"

    if [ -z "$address" ]; then
        if [ -n "$COORD_HOST" ]; then address=${COORD_HOST#*@}; else address=$(hostname -f 2>/dev/null || hostname); fi
    fi
    local scheme=http
    [ -z "$TLS_CA" ] || scheme=https
    URL="$scheme://$address:$PORT"
    save_state
    if [ "$resumed" = 1 ]; then
        echo "ssh-launch: coordinator pid $COORD_PID continues the run at $URL${config:+ (the run keeps its own config; --config ignored)}"
    else
        echo "ssh-launch: coordinator pid $COORD_PID started a new run at $URL"
    fi

    # The token, read over ssh's standard output; it stays in this shell's memory only.
    local token
    token=$(run_on "$COORD_HOST" "cat $(q "$TOKEN_FILE")") || die "cannot read the token $TOKEN_FILE on $(where "$COORD_HOST")"
    token=$(printf '%s' "$token" | tr -d '[:space:]')
    [ -n "$token" ] || die "the token file $TOKEN_FILE is empty"

    local i failed=0 name pid
    for i in "${!w_host[@]}"; do
        h=${w_host[$i]}
        name="${h#*@}-$i"
        script=$(
            cat <<EOF
set -euo pipefail
export KEIMA_TOKEN=$(q "$token")
KEIMA=$(q "$KEIMA"); URL=$(q "$URL"); THREADS=$(q "${w_threads[$i]}"); NAME=$(q "$name")
TLS_CA=$(q "$TLS_CA"); WORKDIR=$(q "$workdir")
[ -z "\$WORKDIR" ] || cd "\$WORKDIR" || { echo "no directory \$WORKDIR on \$(hostname)" >&2; exit 2; }
command -v "\$KEIMA" >/dev/null 2>&1 || { echo "\$KEIMA: not found on \$(hostname) (--keima)" >&2; exit 2; }
if [ -n "\$TLS_CA" ] && [ ! -r "\$TLS_CA" ]; then echo "no CA file \$TLS_CA on \$(hostname)" >&2; exit 2; fi
[ -n "\$THREADS" ] || THREADS=\$(nproc)
args=(worker --coordinator "\$URL" --threads "\$THREADS" --name "\$NAME")
[ -z "\$TLS_CA" ] || args+=(--tls-ca "\$TLS_CA")
mkdir -p keima-logs
nohup "\$KEIMA" "\${args[@]}" >>"keima-logs/worker-\$NAME.log" 2>&1 </dev/null &
echo "\$!"
EOF
        )
        if pid=$(run_on "$h" "$script") && [ -n "$pid" ]; then
            echo "$h $pid $name" >>"$STATE/workers"
            echo "ssh-launch: worker $name on $h: pid $pid, ${w_threads[$i]:-all} threads"
        else
            echo "ssh-launch: worker $name on $h did not start" >&2
            failed=$((failed + 1))
        fi
    done
    unset token
    echo "ssh-launch: $((${#w_host[@]} - failed)) of ${#w_host[@]} workers started; '$0 status' to watch, '$0 stop' to stop"
    [ "$failed" -eq 0 ] || exit 1
}

# ---------------------------------------------------------------- stop

cmd_stop() {
    local wait_s=20
    while [ $# -gt 0 ]; do
        case $1 in
            --state) STATE=${2:?--state needs a directory}; shift 2 ;;
            --wait) wait_s=${2:?--wait needs seconds}; shift 2 ;;
            -h | --help) usage; exit 0 ;;
            *) die "stop: unknown option '$1' (see --help)" ;;
        esac
    done
    case $wait_s in '' | *[!0-9]*) die "stop: --wait must be a number of seconds" ;; esac
    load_state

    # Workers first, all at once: each returns its lease at once, then finishes the
    # computation in hand (up to one shard) before it exits.
    local h pid name
    local -a jobs=()
    if [ -s "$STATE/workers" ]; then
        while read -r h pid name; do
            [ -n "$h" ] || continue
            (
                msg=$(run_on "$h" "$is_ours_fn
pid=$(q "$pid")
is_ours \"\$pid\" worker || { echo 'not running'; exit 0; }
kill -TERM \"\$pid\"
for _ in \$(seq 1 $(q "$wait_s")); do
    is_ours \"\$pid\" worker || { echo 'stopped'; exit 0; }
    sleep 1
done
echo 'lease returned; still finishing its current shard, it exits by itself'" 2>&1) || msg="unreachable: $msg"
                echo "ssh-launch: worker $name on $h: $msg"
            ) &
            jobs+=("$!")
        done <"$STATE/workers"
    fi
    local j
    for j in ${jobs[@]+"${jobs[@]}"}; do wait "$j" || true; done

    # Then the coordinator: it checkpoints (this can take a minute with large weights).
    echo "ssh-launch: stopping the coordinator on $(where "$COORD_HOST") (pid $COORD_PID)"
    if run_on "$COORD_HOST" "$is_ours_fn
pid=$(q "$COORD_PID")
is_ours \"\$pid\" train || { echo 'ssh-launch: the coordinator is not running'; exit 0; }
kill -TERM \"\$pid\"
for _ in \$(seq 1 1800); do
    is_ours \"\$pid\" train || break
    sleep 1
done
if is_ours \"\$pid\" train; then echo 'ssh-launch: the coordinator is still running after 30 minutes' >&2; exit 1; fi
tail -n 2 $(q "$RUN_DIR/logs/coordinator.log")"; then
        rm -f "$STATE/run" "$STATE/workers"
        rmdir "$STATE" 2>/dev/null || true
        echo "ssh-launch: stopped; continue with: $0 start --run-dir $RUN_DIR --hosts FILE${COORD_HOST:+ --coordinator-host $COORD_HOST}"
    else
        die "could not stop the coordinator on $(where "$COORD_HOST"); the state stays in $STATE"
    fi
}

# ---------------------------------------------------------------- status

cmd_status() {
    while [ $# -gt 0 ]; do
        case $1 in
            --state) STATE=${2:?--state needs a directory}; shift 2 ;;
            -h | --help) usage; exit 0 ;;
            *) die "status: unknown option '$1' (see --help)" ;;
        esac
    done
    load_state
    local h pid name state alive=0 total=0
    if [ -s "$STATE/workers" ]; then
        while read -r h pid name; do
            [ -n "$h" ] || continue
            total=$((total + 1))
            if state=$(run_on "$h" "$is_ours_fn; if is_ours $(q "$pid") worker; then echo running; else echo exited; fi" 2>&1); then
                [ "$state" != running ] || alive=$((alive + 1))
            else
                state="unreachable"
            fi
            echo "worker $name on $h (pid $pid): $state"
        done <"$STATE/workers"
    fi
    echo "workers running: $alive of $total"
    # The counters, asked on the coordinator's machine with its token file.
    local status_url tls=""
    if [ -n "$TLS_CA" ]; then
        status_url=$URL
        tls=" --tls-ca $(q "$TLS_CA")"
    else
        status_url="http://127.0.0.1:$PORT"
    fi
    run_on "$COORD_HOST" "$is_ours_fn
[ -z $(q "$WORKDIR") ] || cd $(q "$WORKDIR")
if ! is_ours $(q "$COORD_PID") train; then
    echo $(q "coordinator (pid $COORD_PID): not running; the end of its log:")
    tail -n 3 $(q "$RUN_DIR/logs/coordinator.log")
    exit 1
fi
echo $(q "coordinator (pid $COORD_PID) on $(where "$COORD_HOST"), run directory $RUN_DIR:")
$(q "$KEIMA") status $(q "$status_url") --token-file $(q "$TOKEN_FILE")$tls"
}

# ---------------------------------------------------------------- main

[ $# -gt 0 ] || { usage >&2; exit 2; }
sub=$1
shift
case $sub in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    -h | --help | help) usage ;;
    *) die "unknown command '$sub' (start, stop or status; see --help)" ;;
esac
