"""The reply use case: what happens to one message, from registration to Alfred's answer."""
