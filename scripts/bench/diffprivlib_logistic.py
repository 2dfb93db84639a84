#!/usr/bin/python3
"""diffprivlib's LogisticRegression on breast_cancer, for docs/mechanisms.md.

The comparison of issue 31: the same rows, split, preprocessing, epsilons
and number of noise seeds as TestRealLogistic in
mechanisms/regression/realdata_test.go, run with diffprivlib from its own
source tree (not a dependency of privnotes) and Debian's numpy, scipy and
scikit-learn:

    /usr/bin/python3 scripts/bench/diffprivlib_logistic.py /tmp/diffprivlib_src

Preprocessing: the 30 features of notebooks/data/breast_cancer_scaled.csv
(each mapped to [-0.5, 0.5] by its published range), the class of
breast_cancer.csv (1 = benign). Every row's feature norm is then at most
sqrt(30 * 0.25) = sqrt(7.5), which is diffprivlib's data_norm (it adds the
intercept's 1 itself, as privnotes does). diffprivlib is pure eps-DP
(objective perturbation with the Vector mechanism, delta = 0); privnotes is
(eps, 1e-6)-DP.
"""

import os
import sys
import warnings

import numpy as np

MASK = (1 << 64) - 1
SPLIT_SEED = 31
SEEDS = 20


def test_row(seed, i):
    """The split rule of realdata_test.go's testRow (splitmix64, mod 5)."""
    z = ((seed << 32) + i + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return z % 5 == 0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: diffprivlib_logistic.py PATH_TO_DIFFPRIVLIB_SOURCE")
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    import diffprivlib
    from diffprivlib.models import LogisticRegression
    from sklearn.linear_model import LogisticRegression as Plain

    data = os.path.join(os.path.dirname(__file__), "..", "..", "notebooks", "data")
    x = np.loadtxt(os.path.join(data, "breast_cancer_scaled.csv"), delimiter=",", skiprows=1)
    y = np.loadtxt(os.path.join(data, "breast_cancer.csv"), delimiter=",", skiprows=1)[:, 30]
    test = np.array([test_row(SPLIT_SEED, i) for i in range(len(y))])
    xtr, ytr, xte, yte = x[~test], y[~test], x[test], y[test]
    norm = np.sqrt(30 * 0.25)
    print(f"diffprivlib {diffprivlib.__version__}; {len(ytr)} training rows, {len(yte)} test rows; data_norm {norm:.4f}")
    plain = Plain(max_iter=1000).fit(xtr, ytr).score(xte, yte)
    print(f"non-private scikit-learn LogisticRegression (C = 1): test accuracy {plain:.4f}")
    print("| eps | test accuracy, median [10 %, 90 %] |")
    for eps in (0.5, 1, 2):
        acc = []
        for seed in range(SEEDS):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = LogisticRegression(epsilon=eps, data_norm=norm, random_state=seed).fit(xtr, ytr)
            acc.append(m.score(xte, yte))
        s = np.sort(acc)
        at = lambda p: s[int(round(p * (len(s) - 1)))]
        print(f"| {eps} | {at(0.5):.4f} [{at(0.1):.4f}, {at(0.9):.4f}] |")


if __name__ == "__main__":
    main()
