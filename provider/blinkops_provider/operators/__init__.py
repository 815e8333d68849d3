"""Operators of the Blink provider."""
