"""A DCGAN (Radford et al., 2015), written as PyTorch's examples/dcgan/main.py is (only the
import differs), on synthetic 16x16 single-channel images (Gaussian blobs): a generator of
ConvTranspose2d + BatchNorm2d + ReLU, a discriminator of strided Conv2d + BatchNorm2d +
LeakyReLU, `netG.apply(weights_init)`, BCEWithLogitsLoss, two Adam optimizers with
betas=(0.5, 0.999), and the fake batch `.detach()`ed for the discriminator's update.

    python examples/dcgan.py [--iters N] [--compile BACKEND]

`main(iters=..., backend=None)` returns the (errD, errG, D(x), D(G(z)), D(G(z))) of each
iteration and the blob score of 64 samples (below);
with a backend both networks run under dynjit.compile (one graph each, plus one for D on a
batch that needs gradients through G). At the end it reports how blob-like the samples are:
the share of each sample's brightness within 3 pixels of its brightest pixel, next to the
same measure on real images.
"""
import argparse

import numpy as np

import dynjit as torch
import dynjit.nn as nn

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


def blob_score(images):
    """Mean share of an image's (shifted to [0, 2]) brightness within 3 pixels of its peak."""
    img = (images[:, 0] + 1).clamp(min=0)
    flat = img.flatten(1)
    peak = flat.argmax(dim=1)
    py, px = (peak // 16).float(), (peak % 16).float()
    yy = torch.arange(16).float().view(1, 16, 1)
    xx = torch.arange(16).float().view(1, 1, 16)
    near = ((yy - py.view(-1, 1, 1)).abs() <= 3) & ((xx - px.view(-1, 1, 1)).abs() <= 3)
    return ((img * near).flatten(1).sum(1) / flat.sum(1)).mean().item()


def main(iters=400, backend=None, batch_size=32, seed=0, verbose=True, log_interval=50):
    torch.manual_seed(seed)
    data = make_data(2048)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    if backend:
        netG = torch.compile(netG, backend=backend)
        netD = torch.compile(netD, backend=backend)
    criterion = nn.BCEWithLogitsLoss()
    fixed_noise = torch.randn(64, NZ, 1, 1)
    real_label, fake_label = 1.0, 0.0
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    history = []
    for i in range(iters):
        real = data[torch.randint(0, len(data), (batch_size,))]
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        netD.zero_grad()
        label = torch.full((batch_size,), real_label)
        output = netD(real)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = torch.sigmoid(output).mean().item()
        noise = torch.randn(batch_size, NZ, 1, 1)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = torch.sigmoid(output).mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = torch.sigmoid(output).mean().item()
        optimizerG.step()
        history.append((errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        if verbose and (i % log_interval == 0 or i == iters - 1):
            print(f"[{i}/{iters}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
                  f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")
    with torch.no_grad():
        netG.eval()
        score = blob_score(netG(fixed_noise))
        if verbose:
            print(f"blob score of samples {score:.3f} (real images {blob_score(data[:64]):.3f}, "
                  f"untrained generator {blob_score(Generator().apply(weights_init).eval()(fixed_noise)):.3f})")
    return history, score


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=400)
    parser.add_argument("--compile", dest="backend", default=None, help="a dynjit.compile backend")
    args = parser.parse_args()
    main(iters=args.iters, backend=args.backend)
