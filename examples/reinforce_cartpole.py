"""REINFORCE (Williams, 1992), written as PyTorch's examples/reinforcement_learning/reinforce.py
is (only the import differs), on a hand-written cart-pole (the classic control equations, no
gym): a policy MLP with dropout and softmax, actions drawn from
`torch.distributions.Categorical`, log probabilities saved per step, discounted returns
normalized, and the loss sum(-log_prob * return) minimized with Adam once per episode.

    python examples/reinforce_cartpole.py [--episodes N] [--compile BACKEND]

`main(episodes=..., backend=None)` returns the episode lengths; with a backend the policy
network runs under dynjit.compile (one graph, no break). The running reward passes 150 of
the 200 steps within about 200 episodes."""
import argparse
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F
import dynjit.optim as optim
from dynjit.distributions import Categorical

GAMMA = 0.99
EPS = float(np.finfo(np.float32).eps)


class CartPole:
    """The cart-pole of Barto, Sutton & Anderson (1983) with gym's constants: push the cart
    left or right (actions 0, 1); reward 1 per step until the pole falls past 12 degrees,
    the cart leaves the track, or `max_steps` pass."""

    def __init__(self, seed, max_steps=200):
        self.rng = np.random.RandomState(seed)
        self.max_steps = max_steps

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.steps = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360 or self.steps >= self.max_steps
        return self.state.astype(np.float32), 1.0, done


class Policy(nn.Module):
    def __init__(self, dropout=0.6):
        super().__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=dropout)
        self.affine2 = nn.Linear(128, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


def main(episodes=200, backend=None, seed=543, log_interval=20, verbose=True):
    torch.manual_seed(seed)
    env = CartPole(seed)
    policy = Policy()
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    model = torch.compile(policy, backend=backend) if backend else policy

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = model(state)
        m = Categorical(probs)
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = []
        for r in policy.rewards[::-1]:
            R = r + GAMMA * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + EPS)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]

    running_reward = 10
    lengths = []
    for i_episode in range(1, episodes + 1):
        state, ep_reward = env.reset(), 0
        done = False
        while not done:
            action = select_action(state)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
        lengths.append(ep_reward)
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
        if verbose and i_episode % log_interval == 0:
            print(f"Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}")
        if running_reward > 0.95 * env.max_steps:
            if verbose:
                print(f"Solved! Running reward is now {running_reward:.1f} and the last episode ran to {ep_reward:.0f} time steps!")
            break
    return lengths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=543)
    parser.add_argument("--compile", dest="backend", default=None, help="a dynjit.compile backend")
    args = parser.parse_args()
    main(episodes=args.episodes, backend=args.backend, seed=args.seed)
