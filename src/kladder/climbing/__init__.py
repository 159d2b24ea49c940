"""The climbing layer: the ladder climbed rung by rung (ladder.py), its points re-checked and shrunk, sharded and merged; the session's options."""
