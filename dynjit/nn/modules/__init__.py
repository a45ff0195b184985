"""The layers of dynjit.nn, one module per family (as in torch.nn.modules)."""
from .module import Module
from .linear import Identity, Linear, Bilinear
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .activation import (ReLU, ReLU6, LeakyReLU, ELU, GELU, SiLU, Mish, Sigmoid, Tanh, Softplus,
                         Hardtanh, Threshold, LogSigmoid, Softmax, LogSoftmax, Softmin, MultiheadAttention,
                         Hardsigmoid, Hardswish, SELU, CELU, PReLU, GLU, Softshrink, Hardshrink, Tanhshrink)
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout
from .flatten import Flatten, Unflatten
from .normalization import LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .distance import PairwiseDistance, CosineSimilarity
from .transformer import (Transformer, TransformerEncoder, TransformerDecoder, TransformerEncoderLayer,
                          TransformerDecoderLayer)
from .sparse import Embedding, EmbeddingBag
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
from .loss import (MSELoss, L1Loss, SmoothL1Loss, HuberLoss, NLLLoss, CrossEntropyLoss, BCELoss,
                   BCEWithLogitsLoss, KLDivLoss, TripletMarginLoss, MarginRankingLoss, CosineEmbeddingLoss,
                   SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss, PoissonNLLLoss, MultiMarginLoss)
__all__ = ["Module", "Identity", "Linear", "Bilinear", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict", "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish",
           "Sigmoid", "Tanh", "Softplus", "Hardtanh", "Threshold", "LogSigmoid", "Softmax",
           "LogSoftmax", "Softmin", "Dropout", "Flatten", "Unflatten", "LayerNorm", "BatchNorm1d",
           "BatchNorm2d", "Embedding", "EmbeddingBag", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MultiheadAttention",
           "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "GroupNorm", "RMSNorm", "LocalResponseNorm",
           "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "PixelShuffle", "PixelUnshuffle",
           "PairwiseDistance", "CosineSimilarity", "Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer", "TripletMarginLoss", "MarginRankingLoss",
           "CosineEmbeddingLoss", "Hardsigmoid", "Hardswish", "SELU", "CELU", "PReLU", "GLU", "Softshrink",
           "Hardshrink", "Tanhshrink", "EmbeddingBag", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "HingeEmbeddingLoss", "PoissonNLLLoss", "MultiMarginLoss"]
from .conv import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .rnn import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from . import conv, pooling, rnn, padding  # noqa: E402
from .likelihood_loss import GaussianNLLLoss  # noqa: E402,F401
__all__ += ["GaussianNLLLoss"]
__all__ += conv.__all__ + pooling.__all__ + rnn.__all__ + padding.__all__
from . import module  # noqa: F401  (nn.modules.module.register_module_forward_hook, ...)
