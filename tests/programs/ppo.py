"""In the style of nikhilbarhate99/PPO-PyTorch (PPO.py): a RolloutBuffer of python lists, an
ActorCritic whose actor gives a MultivariateNormal over continuous actions
(`torch.diag(self.action_var).unsqueeze(dim=0)` and `torch.diag_embed(action_var)`) or a
Categorical over discrete ones, `act` under torch.no_grad(), Monte Carlo returns normalised with
`(rewards - rewards.mean()) / (rewards.std() + 1e-7)`, `torch.squeeze(torch.stack(...))
.detach()`, the clipped surrogate with `torch.clamp(ratios, 1-eps, 1+eps)`, MSELoss on the
value, Adam with per-module param groups, `policy_old.load_state_dict(policy.state_dict())`,
and `torch.save`/`torch.load(..., map_location=lambda storage, loc: storage)` of the policy. A
random environment stands in for gym."""
import os
import tempfile

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.distributions import Categorical, MultivariateNormal

device = torch.device('cpu')
if torch.cuda.is_available():
    device = torch.device('cuda:0')
    torch.cuda.empty_cache()


class RolloutBuffer:
    def __init__(self):
        self.actions = []
        self.states = []
        self.logprobs = []
        self.rewards = []
        self.state_values = []
        self.is_terminals = []

    def clear(self):
        del self.actions[:]
        del self.states[:]
        del self.logprobs[:]
        del self.rewards[:]
        del self.state_values[:]
        del self.is_terminals[:]


class ActorCritic(nn.Module):
    def __init__(self, state_dim, action_dim, has_continuous_action_space, action_std_init):
        super(ActorCritic, self).__init__()
        self.has_continuous_action_space = has_continuous_action_space
        if has_continuous_action_space:
            self.action_dim = action_dim
            self.action_var = torch.full((action_dim,), action_std_init * action_std_init).to(
                device)
        if has_continuous_action_space:
            self.actor = nn.Sequential(
                nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                nn.Linear(16, action_dim), nn.Tanh())
        else:
            self.actor = nn.Sequential(
                nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                nn.Linear(16, action_dim), nn.Softmax(dim=-1))
        self.critic = nn.Sequential(
            nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))

    def set_action_std(self, new_action_std):
        self.action_var = torch.full((self.action_dim,), new_action_std * new_action_std).to(
            device)

    def forward(self):
        raise NotImplementedError

    def act(self, state):
        if self.has_continuous_action_space:
            action_mean = self.actor(state)
            cov_mat = torch.diag(self.action_var).unsqueeze(dim=0)
            dist = MultivariateNormal(action_mean, cov_mat)
        else:
            action_probs = self.actor(state)
            dist = Categorical(action_probs)
        action = dist.sample()
        action_logprob = dist.log_prob(action)
        state_val = self.critic(state)
        return action.detach(), action_logprob.detach(), state_val.detach()

    def evaluate(self, state, action):
        if self.has_continuous_action_space:
            action_mean = self.actor(state)
            action_var = self.action_var.expand_as(action_mean)
            cov_mat = torch.diag_embed(action_var).to(device)
            dist = MultivariateNormal(action_mean, cov_mat)
            if self.action_dim == 1:
                action = action.reshape(-1, self.action_dim)
        else:
            action_probs = self.actor(state)
            dist = Categorical(action_probs)
        action_logprobs = dist.log_prob(action)
        dist_entropy = dist.entropy()
        state_values = self.critic(state)
        return action_logprobs, state_values, dist_entropy


class PPO:
    def __init__(self, state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip,
                 has_continuous_action_space, action_std_init=0.6):
        self.has_continuous_action_space = has_continuous_action_space
        if has_continuous_action_space:
            self.action_std = action_std_init
        self.gamma = gamma
        self.eps_clip = eps_clip
        self.K_epochs = K_epochs
        self.buffer = RolloutBuffer()
        self.policy = ActorCritic(state_dim, action_dim, has_continuous_action_space,
                                  action_std_init).to(device)
        self.optimizer = torch.optim.Adam([
            {'params': self.policy.actor.parameters(), 'lr': lr_actor},
            {'params': self.policy.critic.parameters(), 'lr': lr_critic}
        ])
        self.policy_old = ActorCritic(state_dim, action_dim, has_continuous_action_space,
                                      action_std_init).to(device)
        self.policy_old.load_state_dict(self.policy.state_dict())
        self.MseLoss = nn.MSELoss()

    def decay_action_std(self, action_std_decay_rate, min_action_std):
        self.action_std = self.action_std - action_std_decay_rate
        self.action_std = round(self.action_std, 4)
        if self.action_std <= min_action_std:
            self.action_std = min_action_std
        self.policy.set_action_std(self.action_std)
        self.policy_old.set_action_std(self.action_std)

    def select_action(self, state):
        if self.has_continuous_action_space:
            with torch.no_grad():
                state = torch.FloatTensor(state).to(device)
                action, action_logprob, state_val = self.policy_old.act(state)
            self.buffer.states.append(state)
            self.buffer.actions.append(action)
            self.buffer.logprobs.append(action_logprob)
            self.buffer.state_values.append(state_val)
            return action.detach().cpu().numpy().flatten()
        with torch.no_grad():
            state = torch.FloatTensor(state).to(device)
            action, action_logprob, state_val = self.policy_old.act(state)
        self.buffer.states.append(state)
        self.buffer.actions.append(action)
        self.buffer.logprobs.append(action_logprob)
        self.buffer.state_values.append(state_val)
        return action.item()

    def update(self):
        rewards = []
        discounted_reward = 0
        for reward, is_terminal in zip(reversed(self.buffer.rewards),
                                       reversed(self.buffer.is_terminals)):
            if is_terminal:
                discounted_reward = 0
            discounted_reward = reward + (self.gamma * discounted_reward)
            rewards.insert(0, discounted_reward)
        rewards = torch.tensor(rewards, dtype=torch.float32).to(device)
        rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-7)
        old_states = torch.squeeze(torch.stack(self.buffer.states, dim=0)).detach().to(device)
        old_actions = torch.squeeze(torch.stack(self.buffer.actions, dim=0)).detach().to(device)
        old_logprobs = torch.squeeze(torch.stack(self.buffer.logprobs, dim=0)).detach().to(
            device)
        old_state_values = torch.squeeze(torch.stack(self.buffer.state_values, dim=0)).detach(
        ).to(device)
        advantages = rewards.detach() - old_state_values.detach()
        for _ in range(self.K_epochs):
            logprobs, state_values, dist_entropy = self.policy.evaluate(old_states, old_actions)
            state_values = torch.squeeze(state_values)
            ratios = torch.exp(logprobs - old_logprobs.detach())
            surr1 = ratios * advantages
            surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages
            loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards) \
                - 0.01 * dist_entropy
            self.optimizer.zero_grad()
            loss.mean().backward()
            self.optimizer.step()
        self.policy_old.load_state_dict(self.policy.state_dict())
        self.buffer.clear()
        return loss.mean().item()

    def save(self, checkpoint_path):
        torch.save(self.policy_old.state_dict(), checkpoint_path)

    def load(self, checkpoint_path):
        self.policy_old.load_state_dict(torch.load(checkpoint_path,
                                                   map_location=lambda storage, loc: storage))
        self.policy.load_state_dict(torch.load(checkpoint_path,
                                               map_location=lambda storage, loc: storage))


def run(continuous):
    import numpy as np
    rng = np.random.default_rng(0)
    state_dim, action_dim = 4, 2
    agent = PPO(state_dim, action_dim, 3e-4, 1e-3, 0.99, 2, 0.2, continuous, 0.6)
    state = rng.standard_normal(state_dim).astype(np.float32)
    for t in range(1, 13):
        action = agent.select_action(state)
        state = rng.standard_normal(state_dim).astype(np.float32)
        reward = float(np.sum(action)) if continuous else float(action == 1)
        agent.buffer.rewards.append(reward)
        agent.buffer.is_terminals.append(t % 6 == 0)
    loss = agent.update()
    if continuous:
        agent.decay_action_std(0.05, 0.1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "PPO_{}_{}_{}.pth".format("env", 0, 0))
        agent.save(path)
        agent.load(path)
    return loss


def main():
    torch.manual_seed(0)
    loss = run(continuous=True) + run(continuous=False)
    print("loss", loss)
    return loss


if __name__ == "__main__":
    main()
