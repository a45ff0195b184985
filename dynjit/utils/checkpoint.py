"""dynjit.utils.checkpoint: activation checkpointing (torch.utils.checkpoint)."""
