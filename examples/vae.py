"""A variational autoencoder (Kingma & Welling, 2013) on synthetic 8x8 images, written as a
PyTorch program with `torch` replaced by `dynjit`: an MLP encoder to the mean and
log-variance of q(z|x), the reparameterization z = mu + sigma * eps, an MLP decoder with
sigmoid outputs, and the loss binary cross-entropy + KL(q(z|x) || N(0, I)), trained with Adam.

    python examples/vae.py [--steps N] [--compile BACKEND]

`main(steps=..., backend=None)` returns the training losses (per sample); with a backend
the forward and backward pass run under dynjit.compile."""
import argparse

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

SIDE = 8


def make_data(n, generator_seed=1):
    """n images of 8x8 pixels in [0, 1]: one random horizontal and one random vertical bar,
    blurred by a little noise."""
    torch.manual_seed(generator_seed)
    rows = F.one_hot(torch.randint(0, SIDE, (n,)), SIDE).float()
    cols = F.one_hot(torch.randint(0, SIDE, (n,)), SIDE).float()
    images = torch.clamp(rows.unsqueeze(2) + cols.unsqueeze(1), 0, 1)
    noise = torch.rand(n, SIDE, SIDE) * 0.1
    return (images * 0.9 + noise).reshape(n, SIDE * SIDE)


class VAE(nn.Module):
    def __init__(self, in_dim=SIDE * SIDE, hidden=48, latent=4):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc_mu = nn.Linear(hidden, latent)
        self.fc_logvar = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, in_dim)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc_mu(h), self.fc_logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main(steps=1000, backend=None, batch_size=32, lr=3e-3, seed=0, verbose=True):
    data = make_data(512)
    torch.manual_seed(seed)
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def train_step(x):
        recon, mu, logvar = model(x)
        loss = loss_function(recon, x, mu, logvar) / x.shape[0]
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend else train_step
    losses = []
    for step in range(steps):
        idx = torch.randint(0, data.shape[0], (batch_size,))
        x = data[idx]
        optimizer.zero_grad()
        loss = step_fn(x)
        optimizer.step()
        losses.append(loss.item())
        if verbose and (step % 50 == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--compile", dest="backend", default=None, help="a dynjit.compile backend")
    args = parser.parse_args()
    main(steps=args.steps, backend=args.backend)
