"""Tables by geography: noise per level, GLS across regions, non-negativity, variances."""
