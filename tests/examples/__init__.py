"""Tests that run the programs in examples/."""
