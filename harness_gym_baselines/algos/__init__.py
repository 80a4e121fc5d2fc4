"""Training algorithms, one file each (bc, awr, ppo with its sparse and dense variants, ecpo) and what they share."""
