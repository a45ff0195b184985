"""dynjit.utils.data: datasets, samplers and DataLoader (torch.utils.data)."""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,
                      ChainDataset, Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,
                      WeightedRandomSampler, BatchSampler)
from ._collate import default_collate, default_convert
from ._worker import get_worker_info, WorkerInfo
from .dataloader import DataLoader

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "default_collate", "default_convert", "get_worker_info", "WorkerInfo", "DataLoader"]
