package kernel

// ParentPollInterval is parentPollInterval for the external tests.
const ParentPollInterval = parentPollInterval
