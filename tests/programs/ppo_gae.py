"""Proximal policy optimization (Schulman et al., 2017) with generalized advantage estimation,
as CleanRL's ppo.py writes it, on a vectorized CartPole written here in numpy (gym's
equations, no gym): orthogonal `layer_init`, separate actor and critic MLPs,
`Categorical(logits=...)` for sampling, log-probabilities and entropy, rollout buffers
filled step by step by index assignment under `no_grad`, the GAE recursion as a Python loop
over `reversed(range(num_steps))` with `lastgaelam` carried between iterations, minibatches
by `np.random.shuffle` of the batch indices, the clipped surrogate `torch.max(pg_loss1,
pg_loss2)`, the clipped value loss, the entropy bonus, advantage normalization, approximate
KL and clip fractions under `no_grad`, `clip_grad_norm_`, Adam with `eps=1e-5` and a
linearly annealed learning rate set in `param_groups[0]["lr"]`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.optim as optim
from dynjit.distributions.categorical import Categorical

from tests.programs._state import dump_state, load_state


class CartPoleVecEnv:
    """`num_envs` CartPole-v1 environments (gym's dynamics, Euler integration), reset
    automatically when an episode ends (the returned observation is then the new episode's
    first); episodes are truncated after `max_steps`."""
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians = 12 * 2 * np.pi / 360
    x_threshold = 2.4

    def __init__(self, num_envs, seed, max_steps=100):
        self.num_envs, self.max_steps = num_envs, max_steps
        self.rng = np.random.RandomState(seed)
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, (self.num_envs, 4))
        self.elapsed = np.zeros(self.num_envs, np.int64)
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(action == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * theta_dot ** 2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = np.stack([x, x_dot, theta, theta_dot], axis=1)
        self.elapsed += 1
        terminations = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold_radians)
        truncations = ~terminations & (self.elapsed >= self.max_steps)
        reward = np.ones(self.num_envs, np.float32)
        done = terminations | truncations
        if done.any():
            self.state[done] = self.rng.uniform(-0.05, 0.05, (int(done.sum()), 4))
            self.elapsed[done] = 0
        return self.state.astype(np.float32), reward, terminations, truncations, {}


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim=4, n_actions=2, hidden=32):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def run(steps=20, backend=None, init=None, seed=0, num_envs=4, num_steps=16, update_epochs=2, num_minibatches=2,
        learning_rate=2.5e-3, gamma=0.99, gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5,
        max_grad_norm=0.5, target_kl=None, compile_mode="update"):
    """`steps` PPO iterations (a rollout of `num_steps` x `num_envs`, then `update_epochs`
    epochs of minibatch updates); returns (losses, state): per iteration the last loss, the
    policy and value losses, the entropy, the approximate KL, the mean clip fraction and the
    mean episode return finished so far. With `backend`, the minibatch loss and backward
    ("update"), the advantage computation ("gae") or the agent's sampling and evaluation
    method ("policy") runs under dynjit.compile."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    envs = CartPoleVecEnv(num_envs, seed)
    agent = Agent()
    load_state(torch, {"agent": agent}, init)
    optimizer = optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    get_action_and_value = (torch.compile(agent.get_action_and_value, backend=backend)
                            if backend and compile_mode == "policy" else agent.get_action_and_value)

    # ALGO Logic: Storage setup
    obs = torch.zeros((num_steps, num_envs) + (4,))
    actions = torch.zeros((num_steps, num_envs))
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    def compute_gae(next_value, next_done, rewards, dones, values):
        advantages = torch.zeros_like(rewards)
        lastgaelam = 0
        for t in reversed(range(num_steps)):
            if t == num_steps - 1:
                nextnonterminal = 1.0 - next_done
                nextvalues = next_value
            else:
                nextnonterminal = 1.0 - dones[t + 1]
                nextvalues = values[t + 1]
            delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        returns = advantages + values
        return advantages, returns

    def ppo_update(mb_obs, mb_actions, mb_logprobs, mb_advantages, mb_returns, mb_values):
        _, newlogprob, entropy, newvalue = get_action_and_value(mb_obs, mb_actions)
        logratio = newlogprob - mb_logprobs
        ratio = logratio.exp()

        with torch.no_grad():
            # calculate approx_kl http://joschu.net/blog/kl-approx.html
            approx_kl = ((ratio - 1) - logratio).mean()
            clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean()

        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

        # Policy loss
        pg_loss1 = -mb_advantages * ratio
        pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
        pg_loss = torch.max(pg_loss1, pg_loss2).mean()

        # Value loss
        newvalue = newvalue.view(-1)
        v_loss_unclipped = (newvalue - mb_returns) ** 2
        v_clipped = mb_values + torch.clamp(newvalue - mb_values, -clip_coef, clip_coef)
        v_loss_clipped = (v_clipped - mb_returns) ** 2
        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
        v_loss = 0.5 * v_loss_max.mean()

        entropy_loss = entropy.mean()
        loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef

        optimizer.zero_grad()
        loss.backward()
        return loss, pg_loss, v_loss, entropy_loss, approx_kl, clipfrac

    gae = torch.compile(compute_gae, backend=backend) if backend and compile_mode == "gae" else compute_gae
    update = torch.compile(ppo_update, backend=backend) if backend and compile_mode == "update" else ppo_update

    next_obs = torch.Tensor(envs.reset())
    next_done = torch.zeros(num_envs)
    episode_returns, running = [], np.zeros(num_envs)
    losses = []
    for iteration in range(1, steps + 1):
        # Annealing the rate
        frac = 1.0 - (iteration - 1.0) / steps
        lrnow = frac * learning_rate
        optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, num_steps):
            obs[step] = next_obs
            dones[step] = next_done

            # ALGO LOGIC: action logic
            with torch.no_grad():
                action, logprob, _, value = get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            # TRY NOT TO MODIFY: execute the game and log data.
            next_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            running += reward
            for i in np.nonzero(next_done)[0]:
                episode_returns.append(running[i])
                running[i] = 0
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done)

        # bootstrap value if not done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages, returns = gae(next_value, next_done, rewards, dones, values)

        # flatten the batch
        b_obs = obs.reshape((-1,) + (4,))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,))
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        # Optimizing the policy and value network
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]
                loss, pg_loss, v_loss, entropy_loss, approx_kl, clipfrac = update(
                    b_obs[mb_inds], b_actions.long()[mb_inds], b_logprobs[mb_inds], b_advantages[mb_inds],
                    b_returns[mb_inds], b_values[mb_inds])
                clipfracs += [clipfrac.item()]
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

            if target_kl is not None and approx_kl > target_kl:
                break
        losses += [loss.item(), pg_loss.item(), v_loss.item(), entropy_loss.item(), approx_kl.item(),
                   float(np.mean(clipfracs)), float(np.mean(episode_returns)) if episode_returns else 0.0]
    return losses, dump_state({"agent": agent})
