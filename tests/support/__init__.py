"""Helpers of the tests: engines and pairs to start, servers standing in for download sites, the tiers."""
