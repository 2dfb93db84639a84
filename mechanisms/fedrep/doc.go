// Package fedrep implements Private FedRep for personalised linear
// regression with a shared low-dimensional representation: Algorithm 2
// (private initialisation) followed by Algorithm 1 (private alternating
// minimisation–descent) of Snedeker, Zhou and Bassily, "Private Model
// Personalization Revisited" (seed 004), with the corrections and
// calibrations of federated.md §2.
//
// Users are providers of the mechanisms/federated abstraction: each User
// holds its own records and answers the coordinator's rounds with the
// matrices the protocol defines (Z_i for the initialisation, a gradient per
// round). UsersFromSource builds the users of a data set from one pass over
// a rows.Source whose rows carry a response and a user index, with the
// package's public rules for users with few or no records. The coordinator
// is trusted (central DP, billboard model,
// federated.md §2.1): it clips every message and adds Gaussian noise to the
// average before anything is released. The released values are the shared
// representation U and the round history U₀, …, U_T; each user's head v_i
// is computed by the user itself from the released U (User.Personalize) and
// never travels.
//
// Privacy is user-level: neighbouring data sets differ in all records of one
// user, replaced (accounting.ReplaceOne, default) or added/removed with a
// public number of users (accounting.AddRemove). Plan returns the exact cost
// before any data is read.
//
// Noise on sums: the coordinator adds the Gaussian noise to the SUM of
// the clipped messages (sensitivity 2ψ under replacement, ψ under
// add/remove, for every n) and divides the noisy sum by n afterwards, which
// is post-processing. The released average is the spec's (1/n)Σ clip + ξ
// with ξ of std σ/n, but every noise scale, and so every check a plan
// makes, is independent of the number of users: PlanRun fails for one n in
// [1, MaxUsers] exactly when it fails for all, and a plan it returns runs
// without failing on any users' records (project issue 10; the bounds of
// every parameter are documented at MinClip).
//
// Floating point: the coordinator sums the users' clipped messages in the
// fixed pairwise order of rowpass.Pairwise (linalg.Stream, streaming, so
// that no more messages are held than the transport holds), so each term of
// a sum passes through at most 278 roundings whatever the order of
// magnitudes; the resulting 2·γ_278·MaxUsers·ψ is added to each
// sensitivity before calibration (Plan.StepRoundingExcess,
// Plan.InitRoundingExcess: +0.003% noise under replace-one, +0.007% under
// add/remove). A run accepts at most MaxUsers = 2^30 users.
//
// Baselines for experiments only, NOT private: RunNonPrivate (FedRep without
// clipping or noise) and User.LocalGD (each user alone).
package fedrep
