"""Runtime: settings, the composition root, logging, metrics, health and the embedded
servers. Imported by entry points only."""
