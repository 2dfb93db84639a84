// Package jlclass implements practical variants of Algorithm 3 of
// Snedeker, Zhou and Bassily, "Private Model Personalization Revisited"
// (seed 004, 004:L281-289): private representation learning for
// personalised binary classification through a Johnson–Lindenstrauss (JL)
// projection, as specified in federated.md §3.
//
// The paper's construction runs the exponential mechanism over a Frobenius
// γ-cover of a k′×k ball, with k′ = O(r²Γ² log(nm/β)/ρ²); the cover has
// about 10^6758 points at realistic sizes (federated.md §3.5), so it cannot
// run. This package offers:
//
//   - Variant A, Pool: the exponential mechanism over a data-independent
//     pool of candidates (random Gaussian k′×k matrices of Frobenius norm
//     √k, or, when it is small enough, the paper's own γ-cover: the toy
//     exact mode). Pure ε user-level DP, exactly: every user's score is an
//     integer in [0, ScoreScale] that depends on that user's records only,
//     and the selection is sampled without floating-point weights (em.go).
//   - Variant B, FedRepJL: Private FedRep's loop (mechanisms/fedrep, the
//     same coordinator) on the JL-projected features with a logistic
//     surrogate loss: (ε, δ) user-level DP.
//
// Both release U_priv = Mᵀ·Ũ (d×k, not orthonormal: an improper learner,
// 004:L277). The JL matrix M, the candidates and the directions of the
// inner minimisation are PUBLIC randomness drawn from the call's sampler
// (crypto/rand in production) before any record is read; they do not
// depend on the data. Each user's head v_i is computed by the user from
// U_priv and its own second half of records (User.Head) and never leaves
// it.
//
// Privacy is user-level under replace-one or add/remove neighbours for the
// pool (its score is a sum over users, each term in [0, ScoreScale], so
// one user moves it by at most ScoreScale either way and the number of
// users is never needed) and replace-one with a public number of users
// for FedRepJL (as for mechanisms/fedrep).
package jlclass
