"""Helpers every part may use: exact rational conversion, safe message text, optional imports."""
