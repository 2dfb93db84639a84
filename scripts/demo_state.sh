#!/bin/sh
# The state-directory step of make demo (scripts/demo.sh): a rerun starts
# from a fresh state only when the old one holds nothing but what the
# previous demo run made. A ledger that records anything else (the README's
# first analysis registers a dataset there; a notebook in the demo kernel
# charges budget there) is never deleted: it is kept, and the demo runs on it.
#
#   scripts/demo_state.sh prepare PRIVNOTES_BINARY STATE
#   scripts/demo_state.sh record PRIVNOTES_BINARY STATE
#
# prepare prints one word on stdout, what it did, and explains on stderr:
#   fresh  STATE did not exist;
#   reset  STATE held only the previous demo run's datasets and ledger, as
#          record left them, and was deleted;
#   kept   STATE holds something else (or was not made by the demo): it is
#          left as it is. register_datasets.sh then adds only the demo's
#          datasets that are missing, and the notebooks' named calls replay
#          their stored releases at no cost.
# record (after a fresh or reset run only, never after kept) writes a
# fingerprint of STATE to STATE/.privnotes-demo: the ledger as `privnotes
# ledger export --json` shows it, and the checksums of the kernel's and the
# REPL's history files. The ledger is hash-chained, so any later
# registration, charge or removal changes the fingerprint, as does a cell
# run in the demo kernel; and prepare resets only a directory whose entries
# are all privnotes' own (state.db, its journal files, snapshots/, the
# history files) besides that file.
set -eu

usage() {
	echo "usage: $0 prepare|record PRIVNOTES_BINARY STATE" >&2
	exit 2
}
[ $# -eq 3 ] || usage
cmd=$1
bin=$2
state=$3
marker=$state/.privnotes-demo

# only_own succeeds when every entry of STATE is one privnotes or the demo
# writes; it names the first other one on stderr.
only_own() {
	for f in "$state"/* "$state"/.[!.]* "$state"/..?*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		case ${f##*/} in
		state.db | state.db-wal | state.db-shm | state.db-journal | snapshots | kernel-history.jsonl | repl_history | .privnotes-demo) ;;
		*)
			echo "$f" >&2
			return 1
			;;
		esac
	done
}

# fingerprint prints what record keeps and prepare compares.
fingerprint() {
	"$bin" ledger export --json --state "$state"
	for h in kernel-history.jsonl repl_history; do
		if [ -e "$state/$h" ]; then
			echo "$h $(cksum <"$state/$h")"
		fi
	done
}

case $cmd in
prepare)
	if ! [ -e "$state" ] && ! [ -L "$state" ]; then
		echo "$state does not exist: the demo registers its datasets in a new state directory" >&2
		echo fresh
		exit 0
	fi
	why=
	if ! [ -f "$marker" ]; then
		why="it was not made by this demo (no $marker)"
	elif ! other=$(only_own 2>&1); then
		why="it holds $other, which the demo did not write"
	elif ! fingerprint 2>/dev/null | cmp -s - "$marker"; then
		why="its ledger records registrations or charges the demo did not make, or cells ran in the demo kernel since (or the ledger cannot be read)"
	fi
	if [ -z "$why" ]; then
		rm -rf "$state"
		echo "$state held only the previous demo run's datasets and ledger: starting from a fresh one" >&2
		echo reset
		exit 0
	fi
	cat >&2 <<EOF
note: keeping $state: $why.
  make demo never deletes a ledger that records anything but its own run. It
  registers only its datasets that are missing there and runs the notebook on
  this state (its named calls replay their stored releases at no cost).
  To run the demo from a fresh state, move this one away first, for example:
    mv $state ${state%/}-$(date +%Y%m%d-%H%M%S)
  and, to go on working with it there, point PRIVNOTES_STATE (and a kernel:
  privnotes install --state DIR) at its new path.
EOF
	echo kept
	;;
record)
	fingerprint >"$marker.tmp"
	mv "$marker.tmp" "$marker"
	;;
*)
	usage
	;;
esac
