"""A Wasserstein GAN with gradient penalty (Gulrajani et al., 2017) on the 8-Gaussians toy
data, as the common PyTorch implementations write it (caogang/wgan-gp's gan_toy.py,
eriklindernoren's PyTorch-GAN wgan_gp.py): MLP generator and critic, `n_critic` critic
iterations per generator iteration, the critic loss `-mean(D(real)) + mean(D(fake))` on a
`.detach()`ed fake batch, and the penalty on random interpolates made `requires_grad_(True)`:
`autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=ones,
create_graph=True, retain_graph=True, only_inputs=True)`, then `((gradients.norm(2, dim=1) -
1) ** 2).mean() * LAMBDA`, backpropagated through the gradient (second order); Adam with
`betas=(0.5, 0.9)` as in the paper; `zero_grad()` on the models, `requires_grad_(False)` on
the critic's parameters during the generator's step."""
import numpy as np

import dynjit as torch
import dynjit.autograd as autograd
import dynjit.nn as nn

from tests.programs._state import dump_state, load_state

LAMBDA = 0.1     # gan_toy.py's smaller penalty weight for the toy data
DIM = 32


def inf_train_gen(batch_size, rng):
    """Points around the 8 centers on a circle of radius 2, as gan_toy.py's '8gaussians'."""
    scale = 2.0
    centers = [(1, 0), (-1, 0), (0, 1), (0, -1), (1. / np.sqrt(2), 1. / np.sqrt(2)),
               (1. / np.sqrt(2), -1. / np.sqrt(2)), (-1. / np.sqrt(2), 1. / np.sqrt(2)),
               (-1. / np.sqrt(2), -1. / np.sqrt(2))]
    centers = [(scale * x, scale * y) for x, y in centers]
    while True:
        dataset = []
        for i in range(batch_size):
            point = rng.randn(2) * .02
            center = centers[rng.randint(len(centers))]
            point[0] += center[0]
            point[1] += center[1]
            dataset.append(point)
        dataset = np.array(dataset, dtype='float32')
        dataset /= 1.414  # stdev
        yield dataset


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        main = nn.Sequential(
            nn.Linear(2, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, 2),
        )
        self.main = main

    def forward(self, noise, real_data):
        output = self.main(noise)
        return output


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        main = nn.Sequential(
            nn.Linear(2, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, 1),
        )
        self.main = main

    def forward(self, inputs):
        output = self.main(inputs)
        return output.view(-1)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Linear') != -1:
        m.weight.data.normal_(0.0, 0.1)
        m.bias.data.fill_(0)


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, critic_iters=3, compile_mode="step"):
    """Train for `steps` generator iterations (each after `critic_iters` critic iterations);
    returns (losses, state): per iteration the last critic cost, its Wasserstein distance
    estimate and the generator cost. With `backend`, the critic and generator steps
    ("step"), the gradient penalty alone ("penalty") or the two models ("model") run under
    dynjit.compile."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    load_state(torch, {"G": netG, "D": netD}, init)
    modules = {"G": netG, "D": netD}
    G = torch.compile(netG, backend=backend) if backend and compile_mode == "model" else netG
    D = torch.compile(netD, backend=backend) if backend and compile_mode == "model" else netD
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.9))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.9))
    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1

    def calc_gradient_penalty(netD, real_data, fake_data, alpha):
        alpha = alpha.expand(real_data.size())
        interpolates = alpha * real_data + ((1 - alpha) * fake_data)
        interpolates = interpolates.requires_grad_(True)
        disc_interpolates = netD(interpolates)
        gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                  grad_outputs=torch.ones(disc_interpolates.size()),
                                  create_graph=True, retain_graph=True, only_inputs=True)[0]
        gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA
        return gradient_penalty

    penalty = (torch.compile(calc_gradient_penalty, backend=backend) if backend and compile_mode == "penalty"
               else calc_gradient_penalty)

    def critic_step(real_data, noise, alpha):
        netD.zero_grad()
        D_real = D(real_data)
        D_real = D_real.mean()
        D_real.backward(mone)
        with torch.no_grad():
            noisev = noise                                  # totally freeze netG
        fake = G(noisev, real_data).detach()
        D_fake = D(fake)
        D_fake = D_fake.mean()
        D_fake.backward(one)
        gradient_penalty = penalty(D, real_data, fake, alpha)
        gradient_penalty.backward()
        D_cost = D_fake - D_real + gradient_penalty
        Wasserstein_D = D_real - D_fake
        return D_cost, Wasserstein_D

    def generator_step(real_data, noise):
        netG.zero_grad()
        fake = G(noise, real_data)
        G_cost = D(fake)
        G_cost = G_cost.mean()
        G_cost.backward(mone)
        return -G_cost

    compiled = backend and compile_mode == "step"
    critic = torch.compile(critic_step, backend=backend) if compiled else critic_step
    gen = torch.compile(generator_step, backend=backend) if compiled else generator_step
    data = inf_train_gen(batch_size, rng)
    losses = []
    for iteration in range(steps):
        for p in netD.parameters():    # reset requires_grad
            p.requires_grad = True     # they are set to False below in netG update
        for iter_d in range(critic_iters):
            real_data = torch.tensor(next(data))
            noise = torch.tensor(rng.randn(batch_size, 2).astype(np.float32))
            alpha = torch.tensor(rng.rand(batch_size, 1).astype(np.float32))
            D_cost, Wasserstein_D = critic(real_data, noise, alpha)
            optimizerD.step()
        for p in netD.parameters():
            p.requires_grad = False    # to avoid computation
        real_data = torch.tensor(next(data))
        noise = torch.tensor(rng.randn(batch_size, 2).astype(np.float32))
        G_cost = gen(real_data, noise)
        optimizerG.step()
        losses += [D_cost.item(), Wasserstein_D.item(), G_cost.item()]
    for p in netD.parameters():
        p.requires_grad = True
    return losses, dump_state(modules)
