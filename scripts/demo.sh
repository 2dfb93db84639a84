#!/bin/sh
# make demo: from a fresh clone to an executed private-analysis notebook.
#
#  1. checks (and, as root, installs) the Debian packages that drive Jupyter
#     headless: python3-jupyter-client, python3-nbclient, python3-nbformat,
#     jupyter-nbconvert;
#  2. builds bin/privnotes;
#  3. installs the kernel spec into a project-local Jupyter path
#     (build/jupyter/share/jupyter, found through JUPYTER_PATH), pointing the
#     kernel at the demo state directory (build/demo-state): a new one, or
#     the previous run's when it holds anything that run did not make (the
#     README's first analysis registers data there): a ledger is never
#     deleted (scripts/demo_state.sh);
#  4. registers the demo data sets there that are missing, as their data
#     owner would (the generated matrix file is kept in build/demo-data);
#  5. executes notebooks/quickstart.ipynb through the kernel (nbclient) and
#     writes the executed notebook and an HTML rendering under build/demo/
#     (NOTEBOOK=notebooks/federated.ipynb also starts the three local data
#     owners' servers its section 4 federates, and stops them at the end).
#
# Nothing outside the repository is touched except the Debian packages.
# apt-get waits up to 5 minutes for the Debian package lock (another
# apt-get, dpkg or unattended-upgrades run) instead of failing at once.
# Environment: GO (default go), PY (default /usr/bin/python3, Debian's python,
# which is where apt-get installs the Jupyter modules), NOTEBOOK (default
# notebooks/quickstart.ipynb).
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
GO=${GO:-go}
PY=${PY:-/usr/bin/python3}
NOTEBOOK=${NOTEBOOK:-notebooks/quickstart.ipynb}
DEB_PKGS="python3-jupyter-client python3-nbclient python3-nbformat jupyter-nbconvert"
# Wait for the package lock rather than fail when another package manager
# runs.
APT="apt-get -o DPkg::Lock::Timeout=300"
build=$root/build
bin=$root/bin/privnotes
jupyter=$build/jupyter
state=$build/demo-state
out=$build/demo
kernel=privnotes

now() { date +%s.%N 2>/dev/null || date +%s; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step() { printf '\n==> %s\n' "$*"; }
start=$(now)

step "checking the Go toolchain and its C compiler"
if ! command -v "$GO" >/dev/null; then
	echo "error: no Go toolchain ($GO) on PATH; install Go 1.26 from https://go.dev/dl/" >&2
	exit 1
fi
# The data engine links DuckDB through cgo: without a C compiler the build
# would fail after minutes of compiling, so check for one before anything.
cc=$("$GO" env CC 2>/dev/null || :)
cc=${cc%% *}
if [ "$("$GO" env CGO_ENABLED 2>/dev/null || :)" != 1 ] || ! command -v "${cc:-gcc}" >/dev/null; then
	echo "error: building privnotes needs cgo and a C compiler (${cc:-gcc}, for DuckDB), and $GO has none:" >&2
	echo "    sudo apt-get install gcc        # then run make demo again (with CGO_ENABLED unset or 1)" >&2
	exit 1
fi
echo "ok: $("$GO" version), cgo with $cc"

step "checking the Jupyter tools of $PY"
if ! [ -x "$PY" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "$PY is missing; installing python3 and $DEB_PKGS with apt-get"
		$APT update -qq
		DEBIAN_FRONTEND=noninteractive $APT install -y -qq python3 $DEB_PKGS >/dev/null
	else
		echo "error: $PY not found. Install Debian's python3 and the Jupyter tools:" >&2
		echo "    sudo apt-get install python3 $DEB_PKGS" >&2
		exit 1
	fi
fi
if ! "$PY" -c 'import jupyter_client, nbclient, nbformat, nbconvert' 2>/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing $DEB_PKGS with apt-get"
		$APT update -qq
		DEBIAN_FRONTEND=noninteractive $APT install -y -qq $DEB_PKGS >/dev/null
		if ! "$PY" -c 'import jupyter_client, nbclient, nbformat, nbconvert'; then
			echo "error: $PY still cannot import the Jupyter modules after apt-get install $DEB_PKGS" >&2
			exit 1
		fi
	else
		echo "error: $PY cannot import jupyter_client, nbclient, nbformat and nbconvert." >&2
		echo "Install them (Debian/Ubuntu) and run make demo again:" >&2
		echo "    sudo apt-get install $DEB_PKGS" >&2
		exit 1
	fi
fi
echo "ok: $("$PY" -c 'import nbclient, nbconvert; print("nbclient", nbclient.__version__, "nbconvert", nbconvert.__version__)')"

step "building $bin"
t=$(now)
"$GO" build -o "$bin" ./cmd/privnotes
echo "built in $(elapsed "$t") s"

step "preparing the state directory $state"
mode=$(sh scripts/demo_state.sh prepare "$bin" "$state")

step "installing the kernel spec into $jupyter (state: $state)"
rm -rf "$jupyter" "$out"
"$bin" install --prefix "$jupyter" --name "$kernel" --state "$state"
JUPYTER_PATH=$jupyter/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}
export JUPYTER_PATH

step "registering the demo data sets in $state (the data owner's step)"
sh notebooks/scripts/register_datasets.sh "$bin" "$state" "$build/demo-data"

name=$(basename "$NOTEBOOK" .ipynb)
if [ "$name" = federated ]; then
	# Section 4 federates three local data owners: start their servers
	# (notebooks/scripts/federation.sh) and stop them however this ends.
	# Their state directories are the demo's own simulation of three
	# owners, rebuilt each run; no document tells anyone to use them (the
	# state for your own work is $state, which demo_state.sh keeps).
	step "starting the three data owners' servers in $build/federation"
	trap 'sh notebooks/scripts/federation.sh stop "$build/federation"' EXIT
	rm -rf "$build/federation"
	sh notebooks/scripts/federation.sh start "$bin" "$build/federation" $$
	while IFS= read -r v; do export "$v"; done <"$build/federation/env"
fi
step "executing $NOTEBOOK through the $kernel kernel"
t=$(now)
mkdir -p "$out"
status=0
"$PY" notebooks/scripts/run_notebook.py --kernel "$kernel" --timeout 300 \
	--html "$out/$name.html" --kernel-log "$out/kernel.log" \
	"$NOTEBOOK" "$out/$name.ipynb" "$out/$name.json" || status=$?
echo "executed in $(elapsed "$t") s"
"$PY" - "$out/$name.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["cells"]:
    t = c["seconds"]
    mark = ""
    if c["errors"]:
        e = c["errors"][0]
        mark = "  %s (%s)" % (e["ename"], "expected" if "raises-exception" in c["tags"] else "UNEXPECTED")
    print("  cell %2d  %s%s" % (c["index"], "%6.2f s" % t if t is not None else "   -    ", mark))
EOF

step "the ledger of the demo state"
"$bin" ledger show --state "$state" || true
if [ "$mode" != kept ]; then
	# What this run made, so that the next run may start afresh if nothing
	# else is added (never after running on a state it kept).
	sh scripts/demo_state.sh record "$bin" "$state"
fi

if [ "$status" -ne 0 ]; then
	printf "\nerror: %s failed; the executed notebook shows where: %s (kernel log: %s)\n" "$NOTEBOOK" "$out/$name.ipynb" "$out/kernel.log" >&2
	exit "$status"
fi
cat <<EOF

Done in $(elapsed "$start") s.
  executed notebook: $out/$name.ipynb
  HTML rendering:    $out/$name.html
  kernel log:        $out/kernel.log
  kernel spec:       $jupyter/share/jupyter/kernels/$kernel (use it with JUPYTER_PATH=$jupyter/share/jupyter)
  state directory:   $state
                     (the demo kernel's datasets and ledger; for the CLI, the REPL and
                     scripts to use the same, as the README's first analysis does:
                     export PRIVNOTES_STATE=$state)
EOF
