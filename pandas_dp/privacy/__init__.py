"""The privacy measure, stateless: losses (pure DP, zCDP), sensitivities, units and conversions."""
