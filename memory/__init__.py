"""Alfred's memory domain: models, privacy, retrieval, formation, consolidation."""
