"""A capsule network with dynamic routing (Sabour et al., 2017) as XifengGuo's
CapsNet-Pytorch writes it, shrunk to 12x12 synthetic glyphs: a ReLU conv, primary capsules
(a conv whose output is `view`ed into capsule vectors and squashed), dense capsules whose
predictions `x_hat = squeeze(matmul(W, x[:, None, :, :, None]), -1)` are routed for a fixed
number of iterations in a Python loop (`softmax` over the coupling logits, squash of the
weighted sum, the logits updated by the agreement, with `x_hat.detach()` in all but the last
iteration), the capsule lengths as class scores, the reconstruction decoder masked by the
one-hot label (`scatter_`) in training and by the longest capsule (`length.max(dim=1)[1]`)
in testing, the margin loss with `clamp(min=0.)` plus the scaled reconstruction MSE, Adam and
`ExponentialLR`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state


def squash(inputs, axis=-1):
    """The non-linear activation used in Capsule. It drives the length of a large vector to
    near 1 and small vector to 0"""
    norm = torch.norm(inputs, p=2, dim=axis, keepdim=True)
    scale = norm**2 / (1 + norm**2) / (norm + 1e-8)
    return scale * inputs


class DenseCapsule(nn.Module):
    """The dense capsule layer. It is similar to Dense (FC) layer. Dense layer has
    `in_num` inputs, each is a scalar, the output of the neuron from the former layer, and it
    has `out_num` output neurons. DenseCapsule just expands the output of the neuron from
    scalar to vector."""

    def __init__(self, in_num_caps, in_dim_caps, out_num_caps, out_dim_caps, routings=3):
        super(DenseCapsule, self).__init__()
        self.in_num_caps = in_num_caps
        self.in_dim_caps = in_dim_caps
        self.out_num_caps = out_num_caps
        self.out_dim_caps = out_dim_caps
        self.routings = routings
        self.weight = nn.Parameter(0.01 * torch.randn(out_num_caps, in_num_caps, out_dim_caps, in_dim_caps))

    def forward(self, x):
        # x.size=[batch, in_num_caps, in_dim_caps]
        # expanded to    [batch, 1,            in_num_caps, in_dim_caps,  1]
        # weight.size   =[       out_num_caps, in_num_caps, out_dim_caps, in_dim_caps]
        # torch.matmul: [out_dim_caps, in_dim_caps] x [in_dim_caps, 1] -> [out_dim_caps, 1]
        # => x_hat.size =[batch, out_num_caps, in_num_caps, out_dim_caps]
        x_hat = torch.squeeze(torch.matmul(self.weight, x[:, None, :, :, None]), dim=-1)

        # In forward pass, `x_hat_detached` = `x_hat`;
        # In backward, no gradient can flow from `x_hat_detached` back to `x_hat`.
        x_hat_detached = x_hat.detach()

        # The prior for coupling coefficient, initialized as zeros.
        # b.size = [batch, out_num_caps, in_num_caps]
        b = torch.zeros(x.size(0), self.out_num_caps, self.in_num_caps)

        assert self.routings > 0, 'The \'routings\' should be > 0.'
        for i in range(self.routings):
            # c.size = [batch, out_num_caps, in_num_caps]
            c = F.softmax(b, dim=1)

            # At last iteration, use `x_hat` to compute `outputs` in order to backpropagate gradient
            if i == self.routings - 1:
                # c.size expanded to [batch, out_num_caps, in_num_caps, 1           ]
                # x_hat.size     =   [batch, out_num_caps, in_num_caps, out_dim_caps]
                # => outputs.size=   [batch, out_num_caps, 1,           out_dim_caps]
                outputs = squash(torch.sum(c[:, :, :, None] * x_hat, dim=-2, keepdim=True))
            else:  # Otherwise, use `x_hat_detached` to update `b`. No gradients flow on this path.
                outputs = squash(torch.sum(c[:, :, :, None] * x_hat_detached, dim=-2, keepdim=True))

                # outputs.size       =[batch, out_num_caps, 1,           out_dim_caps]
                # x_hat_detached.size=[batch, out_num_caps, in_num_caps, out_dim_caps]
                # => b.size          =[batch, out_num_caps, in_num_caps]
                b = b + torch.sum(outputs * x_hat_detached, dim=-1)

        return torch.squeeze(outputs, dim=-2)


class PrimaryCapsule(nn.Module):
    """Apply Conv2D with `out_channels` and then reshape to get capsules"""

    def __init__(self, in_channels, out_channels, dim_caps, kernel_size, stride=1, padding=0):
        super(PrimaryCapsule, self).__init__()
        self.dim_caps = dim_caps
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        outputs = self.conv2d(x)
        outputs = outputs.view(x.size(0), -1, self.dim_caps)
        return squash(outputs)


class CapsuleNet(nn.Module):
    """A Capsule Network on the glyphs: conv, primary capsules, routed class capsules and a
    reconstruction decoder."""

    def __init__(self, input_size, classes, routings):
        super(CapsuleNet, self).__init__()
        self.input_size = input_size
        self.classes = classes
        self.routings = routings

        # Layer 1: Just a conventional Conv2D layer
        self.conv1 = nn.Conv2d(input_size[0], 16, kernel_size=5, stride=1, padding=0)

        # Layer 2: Conv2D layer with `squash` activation, then reshape to [None, num_caps, dim_caps]
        self.primarycaps = PrimaryCapsule(16, 16, 4, kernel_size=3, stride=2, padding=0)

        # Layer 3: Capsule layer. Routing algorithm works here.
        self.digitcaps = DenseCapsule(in_num_caps=4 * 3 * 3, in_dim_caps=4,
                                      out_num_caps=classes, out_dim_caps=8, routings=routings)

        # Decoder network.
        self.decoder = nn.Sequential(
            nn.Linear(8 * classes, 64),
            nn.ReLU(inplace=True),
            nn.Linear(64, input_size[0] * input_size[1] * input_size[2]),
            nn.Sigmoid()
        )

        self.relu = nn.ReLU()

    def forward(self, x, y=None):
        x = self.relu(self.conv1(x))
        x = self.primarycaps(x)
        x = self.digitcaps(x)
        length = x.norm(dim=-1)
        if y is None:  # during testing, no label given. create one-hot coding using `length`
            index = length.max(dim=1)[1]
            y = torch.zeros(length.size()).scatter_(1, index.view(-1, 1).cpu().data, 1.)
        reconstruction = self.decoder((x * y[:, :, None]).view(x.size(0), -1))
        return length, reconstruction.view(-1, *self.input_size)


def caps_loss(y_true, y_pred, x, x_recon, lam_recon):
    """Capsule loss = Margin loss + lam_recon * reconstruction loss."""
    L = y_true * torch.clamp(0.9 - y_pred, min=0.) ** 2 + \
        0.5 * (1 - y_true) * torch.clamp(y_pred - 0.1, min=0.) ** 2
    L_margin = L.sum(dim=1).mean()

    L_recon = nn.MSELoss()(x_recon, x)

    return L_margin + lam_recon * L_recon


def make_glyphs(n, seed=0):
    """n 1x12x12 images of 3 classes (a bar, a cross, a box), jittered and noisy, in [0, 1]."""
    rng = np.random.RandomState(seed)
    images = np.zeros((n, 1, 12, 12), np.float32)
    labels = rng.randint(0, 3, n)
    for img, label in zip(images, labels):
        r, c = rng.randint(2, 5, 2)
        if label == 0:
            img[0, r:r + 7, c + 3] = 1
        elif label == 1:
            img[0, r + 3, c:c + 7] = 1
            img[0, r:r + 7, c + 3] = 1
        else:
            img[0, r, c:c + 7] = img[0, r + 6, c:c + 7] = 1
            img[0, r:r + 7, c] = img[0, r:r + 7, c + 6] = 1
    images += 0.1 * rng.rand(*images.shape).astype(np.float32)
    return np.clip(images, 0, 1), labels


def run(steps=20, backend=None, init=None, seed=0, batch_size=8, routings=3, lam_recon=0.0005 * 144,
        compile_mode="step"):
    """Train for `steps` batches, then test; returns (losses, state): the loss per step, then
    the test loss and accuracy (reconstruction masked by the predicted class). With
    `backend`, the training step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    images, labels = make_glyphs(256, seed)
    model = CapsuleNet(input_size=[1, 12, 12], classes=3, routings=routings)
    load_state(torch, {"model": model}, init)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    lr_decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)

    def train_step(x, y):
        y = torch.zeros(y.size(0), 3).scatter_(1, y.view(-1, 1), 1.)  # change to one-hot coding
        optimizer.zero_grad()  # set gradients of optimizer to zero
        y_pred, x_recon = net(x, y)  # forward
        loss = caps_loss(y, y_pred, x, x_recon, lam_recon)  # compute loss
        loss.backward()  # backward, compute all gradients of loss w.r.t all Variables
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    losses = []
    model.train()
    for step in range(steps):
        idx = rng.randint(0, len(images), batch_size)
        loss = step_fn(torch.from_numpy(images[idx]), torch.from_numpy(labels[idx]))
        optimizer.step()  # update the trainable parameters with computed gradients
        losses.append(loss.item())
        if step % 5 == 4:
            lr_decay.step()  # decrease the learning rate
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        x, y = torch.from_numpy(images[:32]), torch.from_numpy(labels[:32])
        y_onehot = torch.zeros(y.size(0), 3).scatter_(1, y.view(-1, 1), 1.)
        y_pred, x_recon = net(x)
        test_loss += caps_loss(y_onehot, y_pred, x, x_recon, lam_recon).item() * x.size(0)  # sum up batch loss
        y_pred = y_pred.data.max(1)[1]
        correct += y_pred.eq(y).cpu().sum().item()
    losses += [test_loss / 32, correct / 32]
    return losses, dump_state({"model": model})
