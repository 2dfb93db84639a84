# Writes the public spiked_matrix recipe of power-methods.ipynb: a d×d
# symmetric matrix 0.3·d·u uᵀ + 0.2·d·v vᵀ + W, clamped to [-1, 1], with u
# and v the orthonormal DCT-II vectors of frequencies 3 and 5 (incoherent:
# every entry at most √(2/d)) and W a deterministic symmetric perturbation
# in (-0.1, 0.1) (a hash of i·j and i+j). Usage: awk -v d=500 -f THIS.
BEGIN {
	pi = atan2(0, -1)
	for (i = 0; i < d; i++) {
		u[i] = sqrt(2 / d) * cos(pi * (2 * i + 1) * 3 / (2 * d))
		v[i] = sqrt(2 / d) * cos(pi * (2 * i + 1) * 5 / (2 * d))
	}
	for (i = 0; i < d; i++) {
		line = ""
		for (j = 0; j < d; j++) {
			h = sin((i * j + 7 * (i + j) + 1) * 12.9898) * 43758.5453
			# the products u[i]·u[j] come first, so (i, j) and (j, i) round alike
			a = 0.3 * d * (u[i] * u[j]) + 0.2 * d * (v[i] * v[j]) + 0.1 * (h - int(h))
			if (a > 1) a = 1
			if (a < -1) a = -1
			line = line (j ? "," : "") sprintf("%.6f", a)
		}
		print line
	}
}
