"""Redis adapters: the connection, the arq job queue and the per-thread formation locks."""
