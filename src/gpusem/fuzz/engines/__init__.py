"""Campaign engines: what runs a campaign's shards (`base.py` is the interface)."""
