"""Agreement between system rankings: correlation statistics (more to come: CIs, baselines)."""
