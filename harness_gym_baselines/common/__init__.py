"""What the rooms above share: the checks of command-line options, dataclass configs as flags, the trainer registry."""
