"""Losses and regularisers."""
