"""Google adapters: the Calendar API client, the OAuth flow and redirect endpoint, and
the encryption of calendar tokens (the ports are in ``memory/calendar_ports.py``)."""
