"""A DCGAN (Radford et al., 2015) in the style of PyTorch's examples/dcgan, on synthetic 16x16
"images" (blurred blobs): a generator of ConvTranspose2d + BatchNorm2d + ReLU layers and a
discriminator of strided Conv2d + BatchNorm2d + LeakyReLU layers, initialized with
`model.apply(weights_init)`, trained with BCEWithLogitsLoss and two Adam optimizers; the
fake batch is `.detach()`ed for the discriminator's step."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn

from tests.programs._state import dump_state, load_state

NZ, NGF, NDF, NC = 8, 8, 8, 1


def make_data(n, seed=0):
    """n single-channel 16x16 images, each a Gaussian blob at a random place, in [-1, 1]."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:16, 0:16]
    cy, cx = rng.uniform(4, 12, (2, n, 1, 1))
    img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
    return torch.tensor((img * 2 - 1)[:, None].astype(np.float32))


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 4, 4, 1, 0, bias=False),       # 4x4
            nn.BatchNorm2d(NGF * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 4, NGF * 2, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NC, 4, 2, 1, bias=False),       # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),                    # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),               # 4x4
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False),                 # 1x1
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def run(steps=20, backend=None, init=None, batch_size=16, seed=0):
    """Train for `steps` iterations; returns (losses, state): one loss per step (errD + errG)
    and the final parameters and buffers. With `backend`, both models run under
    dynjit.compile (compiling the step functions instead fails as torch.compile's aot_eager
    does: the D step's backward frees the compiled graph that made `fake`, which the G step
    later backpropagates through)."""
    torch.manual_seed(seed)
    data = make_data(256)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    load_state(torch, {"G": netG, "D": netD}, init)
    modules = {"G": netG, "D": netD}
    if backend:
        netG = torch.compile(netG, backend=backend)
        netD = torch.compile(netD, backend=backend)
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    rng = np.random.RandomState(seed + 1)

    def d_step(real, noise):
        netD.zero_grad()
        label = torch.full((real.size(0),), 1.0)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        return errD_real + errD_fake, fake

    def g_step(fake):
        netG.zero_grad()
        label = torch.full((fake.size(0),), 1.0)       # fake labels are real for the generator
        errG = criterion(netD(fake), label)
        errG.backward()
        return errG

    losses = []
    for i in range(steps):
        real = data[torch.tensor(rng.randint(0, len(data), batch_size))]
        noise = torch.tensor(rng.randn(batch_size, NZ, 1, 1).astype(np.float32))
        errD, fake = d_step(real, noise)
        optimizerD.step()
        errG = g_step(fake)
        optimizerG.step()
        losses.append(errD.item() + errG.item())
    return losses, dump_state(modules)
