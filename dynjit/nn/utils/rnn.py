"""Sequence packing and padding (torch.nn.utils.rnn)."""
