#!/bin/sh
# Derives notebooks/data/breast_cancer_scaled.csv from breast_cancer.csv by a
# PUBLIC rule only: each feature is mapped to [-0.5, 0.5] with the minimum and
# maximum published in breast_cancer.rst ("Summary Statistics"), i.e.
#   x' = (x - min) / (max - min) - 0.5,
# and the class column is left out. No statistic of the rows themselves is
# used, so the transform is the data owner's public preprocessing and the
# differential-privacy guarantee of the registered data is unaffected.
# Usage: notebooks/scripts/scale_breast_cancer.sh > notebooks/data/breast_cancer_scaled.csv
set -eu
dir=$(dirname "$0")/../data
awk '
/^    =====/ { sep++; next }
sep == 2 && /:/ {
	# "radius (mean):  6.981  28.11" -> name, min, max
	line = $0; sub(/^ +/, "", line)
	split(line, parts, ":")
	name = parts[1]; n = split(parts[2], v, " ")
	kind = name; sub(/^.*\(/, "", kind); sub(/\).*$/, "", kind)
	base = name; sub(/ *\(.*$/, "", base); gsub(/ /, "_", base)
	if (kind == "mean") col = "mean_" base
	else if (kind == "standard error") col = base "_se"
	else col = "worst_" base
	k++; names[k] = col; lo[k] = v[1]; hi[k] = v[2]
	next
}
FNR == NR { next }
FNR == 1 {
	if (k != 30) { print "expected 30 ranges in the .rst, found " k > "/dev/stderr"; exit 1 }
	for (i = 1; i <= k; i++) printf "%s%s", names[i], (i < k ? "," : "\n")
	next
}
{
	n = split($0, f, ",")
	if (n != 31) { print "line " FNR ": expected 31 fields, found " n > "/dev/stderr"; exit 1 }
	for (i = 1; i <= k; i++) printf "%.6g%s", (f[i] - lo[i]) / (hi[i] - lo[i]) - 0.5, (i < k ? "," : "\n")
}
' "$dir/breast_cancer.rst" FS=, "$dir/breast_cancer.csv"
