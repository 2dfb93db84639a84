//go:build integration

package testtier

const integration = true
