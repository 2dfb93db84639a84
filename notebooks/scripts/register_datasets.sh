#!/bin/sh
# Registers the data sets the notebooks use into a state directory, as their
# data owner would. Used by scripts/demo.sh and notebooks/notebooks_test.go,
# so the demo and the tests see the same registrations.
#
#   notebooks/scripts/register_datasets.sh PRIVNOTES_BINARY STATE_DIR [SOURCE_DIR]
#
# A data set already registered in STATE_DIR is left as it is (make demo
# reruns on a state the user keeps, scripts/demo_state.sh). SOURCE_DIR
# (default: the directory holding STATE_DIR) keeps the files generated here,
# spiked_matrix.txt, so that the source each registration records exists.
#
# breast_cancer: 569 rows, 30 features scaled by their published ranges (see
# notebooks/data/README.md); one row is one person. Total budget ε=3, δ=1e-6
# under the zCDP accountant; rows are clipped to L2 norm 2.5, a public bound
# that follows from the scaling (30 coordinates in about [-0.5, 0.5]).
set -eu
if [ $# -ne 2 ] && [ $# -ne 3 ]; then
	echo "usage: $0 PRIVNOTES_BINARY STATE_DIR [SOURCE_DIR]" >&2
	exit 2
fi
bin=$1
state=$2
sources=${3:-$(dirname "$state")}
data=$(cd "$(dirname "$0")/../data" && pwd)

# missing succeeds when dataset $1 is not registered in the state yet.
missing() {
	if "$bin" dataset show "$1" --state "$state" >/dev/null 2>&1; then
		echo "$1: already registered in $state, kept as it is"
		return 1
	fi
}

missing breast_cancer && "$bin" dataset add breast_cancer --state "$state" \
	--csv "$data/breast_cancer_scaled.csv" --header yes \
	--eps 3 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one

# wine: 178 rows, 13 chemical measurements and the cultivar, registered as a
# typed snapshot (--from): the cultivar is categorical with its public domain,
# and four columns get public bounds (rounded out from the ranges the data's
# description publishes, notebooks/data/wine.rst). Total budget ε=6, δ=1e-6.
missing wine && "$bin" dataset add wine --state "$state" \
	--from "$data/wine.csv" \
	--categories cultivar=class_0,class_1,class_2 \
	--bounds alcohol=10:15,magnesium=60:170,proline=200:1800,color_intensity=0:14 \
	--eps 6 --delta 1e-6 --clip 2000 --unit row --neighbour replace-one

# spiked_matrix: a 500×500 symmetric matrix registered as a matrix dataset
# (entry-level DP: neighbours differ in one entry and its mirror, entries
# in [-1, 1]) for the entry-level PCA section of power-methods.ipynb. No data
# file: the matrix is a public recipe, written here by make_spiked_matrix.awk
# (0.3·d·u uᵀ + 0.2·d·v vᵀ with u, v the DCT-II basis vectors of frequencies
# 3 and 5, plus a deterministic symmetric perturbation in (-0.1, 0.1),
# clamped to [-1, 1]). Budget ε=40, δ=1e-5 under basic composition: the
# notebook spends one Gaussian and one pure-ε call of ε=16 each.
# The matrix file stays in SOURCE_DIR: the registration records its path.
if missing spiked_matrix; then
	mkdir -p "$sources"
	matrix=$(cd "$sources" && pwd)/spiked_matrix.txt
	awk -v d=500 -f "$(dirname "$0")/make_spiked_matrix.awk" >"$matrix.tmp"
	mv "$matrix.tmp" "$matrix"
	"$bin" dataset add spiked_matrix --state "$state" \
		--matrix "$matrix" --entry-bound 1 \
		--eps 40 --delta 1e-5 --accountant basic
fi

# breast_cancer_live: the same 569 rows in a live PostgreSQL table, for
# quickstart-live.ipynb, registered where they are as docs/deployment.md
# (2.4) tells an owner, with breast_cancer's budget and clip. Only when
# BREAST_CANCER_PG_URL names the server (postgres://ROLE@HOST:PORT/DB, a
# role that may read public.breast_cancer) and
# BREAST_CANCER_PG_PASSWORD_FILE holds its password: notebooks_test.go
# loads the CSV into a throwaway cluster and sets both.
if [ -n "${BREAST_CANCER_PG_URL:-}" ] && missing breast_cancer_live; then
	"$bin" dataset add breast_cancer_live --state "$state" \
		--from "$BREAST_CANCER_PG_URL" --table public.breast_cancer \
		--password-file "$BREAST_CANCER_PG_PASSWORD_FILE" \
		--eps 3 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one
fi

# breast_cancer_ch: the same rows in a ClickHouse Distributed table over
# two shards, for quickstart-clickhouse.ipynb, registered where they are
# as docs/deployment.md tells an owner, with breast_cancer's budget and
# clip. Only when BREAST_CANCER_CH_URL names the server
# (clickhouse://USER@HOST:HTTP_PORT/DB, a user that may read
# db.breast_cancer) and BREAST_CANCER_CH_PASSWORD_FILE holds its
# password: notebooks_test.go loads the CSV into a throwaway server and
# sets both.
if [ -n "${BREAST_CANCER_CH_URL:-}" ] && missing breast_cancer_ch; then
	"$bin" dataset add breast_cancer_ch --state "$state" \
		--from "$BREAST_CANCER_CH_URL" --table db.breast_cancer \
		--password-file "$BREAST_CANCER_CH_PASSWORD_FILE" \
		--eps 3 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one
fi
