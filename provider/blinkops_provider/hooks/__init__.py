"""Hooks of the Blink provider."""
