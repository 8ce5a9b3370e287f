"""Application services: the use cases (a reply, membership, formation duties, calendar,
admin operations), on the domain and its ports only."""
