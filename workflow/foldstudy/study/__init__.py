"""The study as data: arm and fact specs, the config, the run design, the fixtures."""
