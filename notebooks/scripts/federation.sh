#!/bin/sh
# Starts and stops the three local data owners of section 4 of
# notebooks/federated.ipynb: each is a `privnotes serve` process with its own
# state directory (registry and ledger) holding one third of the public
# breast_cancer rows as dataset "part". Used by notebooks/notebooks_test.go
# and scripts/demo.sh, so the tests and the demo run the same federation.
#
#   notebooks/scripts/federation.sh start PRIVNOTES_BINARY DIR OWNER_PID
#   notebooks/scripts/federation.sh stop DIR
#
# start writes certificates to DIR/tls (`privnotes certs init`), registers
# the parts in DIR/p1..p3, starts the servers on free loopback ports (each
# listens on 127.0.0.1:0 and prints the port it got), waits until all three
# listen and prints the client's environment:
#
#   PRIVNOTES_SERVERS=p1=127.0.0.1:PORT,p2=...,p3=...
#   PRIVNOTES_TLS_DIR=DIR/tls
#
# (also kept in DIR/env). Every server gets a watchdog that stops it when
# OWNER_PID (the test or demo process) is gone, so a caller killed before it
# could run stop leaves no server behind. stop ends the servers and their
# watchdogs and waits for them.
#
# The parts: rows 1–190, 191–380 and 381–569 of notebooks/data/
# breast_cancer_scaled.csv, registered as register_datasets.sh registers
# the whole file (clip 2.5, replace-one rows, zCDP), each with its own budget
# ε=10, δ=1e-6 (section 4 spends ε=4 at each): the owners share no ledger.
set -eu

usage() {
	echo "usage: $0 start PRIVNOTES_BINARY DIR OWNER_PID | stop DIR" >&2
	exit 2
}

# stop_all ends every process listed in DIR/pids (servers and watchdogs)
# and waits until they are gone (at most 5 s, then SIGKILL).
stop_all() {
	[ -f "$1/pids" ] || return 0
	pids=$(cat "$1/pids")
	for p in $pids; do kill "$p" 2>/dev/null || :; done
	i=0
	while [ $i -lt 50 ]; do
		alive=
		for p in $pids; do
			if kill -0 "$p" 2>/dev/null; then alive=1; fi
		done
		[ -n "$alive" ] || break
		sleep 0.1
		i=$((i + 1))
	done
	for p in $pids; do kill -9 "$p" 2>/dev/null || :; done
	rm -f "$1/pids"
}

[ $# -ge 1 ] || usage
case $1 in
stop)
	[ $# -eq 2 ] || usage
	stop_all "$2"
	exit 0
	;;
start)
	[ $# -eq 4 ] || usage
	;;
*)
	usage
	;;
esac
bin=$2
dir=$3
owner=$4
data=$(cd "$(dirname "$0")/../data" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tls=$dir/tls
# A failed start leaves nothing running.
trap 'stop_all "$dir"' EXIT

"$bin" certs init "$tls" --hosts 127.0.0.1,localhost >/dev/null

src=$data/breast_cancer_scaled.csv
header=$(head -n 1 "$src")
servers=
: >"$dir/pids"
for i in 1 2 3; do
	state=$dir/p$i
	csv=$dir/part$i.csv
	first=$(((i - 1) * 190 + 2)) # line 1 is the header
	{
		echo "$header"
		tail -n +"$first" "$src" | head -n 190
	} >"$csv"
	"$bin" dataset add part --state "$state" \
		--csv "$csv" --header yes \
		--eps 10 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one >/dev/null
	log=$dir/p$i.log
	: >"$log"
	# Nothing of the caller's stdin/stdout stays open in the background:
	# a caller that reads this script's output (go test) sees its end.
	"$bin" serve --state "$state" --listen 127.0.0.1:0 --tls-dir "$tls" \
		</dev/null >"$log" 2>&1 &
	spid=$!
	echo "$spid" >>"$dir/pids"
	(
		while kill -0 "$owner" 2>/dev/null && kill -0 "$spid" 2>/dev/null; do sleep 1; done
		kill "$spid" 2>/dev/null || :
	) </dev/null >/dev/null 2>&1 &
	echo "$!" >>"$dir/pids"
	addr=
	n=0
	while [ -z "$addr" ]; do
		addr=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$log")
		[ -n "$addr" ] && break
		if ! kill -0 "$spid" 2>/dev/null || [ $n -ge 300 ]; then
			echo "federation.sh: privnotes serve for p$i did not start:" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.1
		n=$((n + 1))
	done
	servers=${servers:+$servers,}p$i=$addr
done
printf 'PRIVNOTES_SERVERS=%s\nPRIVNOTES_TLS_DIR=%s\n' "$servers" "$tls" | tee "$dir/env"
trap - EXIT
