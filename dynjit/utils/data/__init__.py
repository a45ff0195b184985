"""dynjit.utils.data: datasets, samplers and DataLoader (torch.utils.data)."""
