"""Playground 1: the KL-regularised objective on a one-dimensional action axis.

The reader's "language model" is a Gaussian policy pi_theta = N(mu, sigma^2) over one
real action a, with parameters theta = (mu, s = log sigma). The reference policy is
pi_ref = N(0, REF_SIGMA^2). The reward r(a) is a sum of Gaussian bumps, so both terms of

    J(theta) = E_{a ~ pi_theta}[r(a)] - beta KL(pi_theta || pi_ref)

have closed forms and so does their gradient. Six optimisers climb (or, for DPO and
DRO, do not directly climb) this J from one shared start; all of them are here.

Why simulate in the browser rather than precompute a grid of control values: the
controls (preset, beta, N, G, eps, steps, seed) multiply to millions of combinations,
and any coarse grid would make the sliders jump. One trajectory costs microseconds, so
the browser runs a line-for-line port of this module (unipo_build/site/playgrounds/playgrounds-sim.js)
with the same random source (``rng``); ``tests/test_playground_js_parity.py`` runs that
port in node on fixed inputs and holds it equal to this numpy reference to 1e-9. The
build also renders the default settings' figures from this module, so the page shows
the right picture before (or without) any script.

Sources for the update rules: REINFORCE (Williams 1992); PPO (arXiv 1707.06347);
GRPO (arXiv 2402.03300, eq. 3); DPO (arXiv 2305.18290, eq. 7); DRO (Richemond et al.,
"Offline Regularised Reinforcement Learning for Large Language Models Alignment",
arXiv 2405.19107, eq. 4). Simplifications made so the six differ only where the
algorithms do, stated once: every on-policy method (PG, PPO, GRPO) uses the exact
gradient of the KL term rather than a sampled estimate, and PPO puts the KL in the
loss rather than in the reward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from unipo_build.core.components import clipped_surrogate, group_zscore_advantage
from unipo_build.site.playgrounds.rng import Stream, stream_seed

REF_SIGMA = 1.5
START_MU = 0.0
START_SIGMA = REF_SIGMA
# log sigma stays inside this box (the surface's sigma range is a little narrower);
# without it a narrow reward spike could drive sigma towards 0 in a few noisy steps.
LOG_SIGMA_MIN = math.log(0.05)
LOG_SIGMA_MAX = math.log(4.0)

METHODS = ("exact", "pg", "ppo", "grpo", "dpo", "dro")
METHOD_LABELS = {
    "exact": "Exact gradient",
    "pg": "Policy gradient",
    "ppo": "PPO",
    "grpo": "GRPO",
    "dpo": "DPO",
    "dro": "DRO",
}

# Step sizes, one per method, fixed so that only the reader's controls change a run.
# DPO and DRO minimise losses whose curvature in theta grows as beta^2 (their residual
# is beta * log-ratio), so their step is divided by beta^2 to keep their speed
# comparable across beta (the direction of each step is untouched).
LEARNING_RATES = {
    "exact": 0.3,
    "pg": 0.3,
    "ppo": 0.1,  # per inner epoch; PPO takes PPO_EPOCHS of them per rollout
    "grpo": 0.05,  # its advantages are z-scores, several times larger than raw ones
    "dpo": 0.05,
    "dro": 0.05,
}
VALUE_LEARNING_RATE = 0.2  # PPO's scalar critic and DRO's V
PPO_EPOCHS = 4  # inner epochs per rollout for PPO and GRPO (ratios move away from 1)


# The beta slider's stops (a log-like scale); the page's default is 0.3.
BETA_CHOICES = (0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class Bump:
    """One term h * exp(-(a - c)^2 / (2 w^2)) of the reward."""

    height: float
    center: float
    width: float


@dataclass(frozen=True)
class RewardPreset:
    key: str
    label: str
    bumps: tuple[Bump, ...]
    blurb: str


PRESETS: dict[str, RewardPreset] = {
    p.key: p
    for p in (
        RewardPreset(
            "single", "Single bump", (Bump(1.0, 2.0, 0.8),),
            "one rewarded region to the right of the reference mode",
        ),
        RewardPreset(
            "two", "Two bumps", (Bump(0.8, -2.0, 0.6), Bump(1.0, 2.2, 0.9)),
            "a smaller bump on the start's side, a larger one across the reference mode",
        ),
        RewardPreset(
            "trap", "Trap", (Bump(0.6, -1.0, 0.7), Bump(2.0, 3.2, 0.25)),
            "a broad, low hill near the start and a tall, narrow peak far away",
        ),
        RewardPreset(
            "negative", "Negative", (Bump(-1.0, 0.6, 0.8),),
            "a penalty where the reference puts most of its mass; no reward anywhere",
        ),
    )
}


@dataclass(frozen=True)
class Settings:
    """The reader's controls, with the page's defaults."""

    preset: str = "single"
    beta: float = 0.3
    n_samples: int = 16  # N: PG, PPO, DPO (pairs) and DRO draws per step
    group_size: int = 8  # G: GRPO's group
    eps: float = 0.2  # PPO and GRPO clip range
    steps: int = 150
    seed: int = 1
    epochs: int = PPO_EPOCHS
    lr_scale: float = 1.0  # multiplies every step size (tests use small steps)
    start_mu: float = START_MU
    start_sigma: float = START_SIGMA

    @property
    def bumps(self) -> tuple[Bump, ...]:
        return PRESETS[self.preset].bumps


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------

def reward(a, bumps):
    """r(a) = sum_k h_k exp(-(a - c_k)^2 / (2 w_k^2)), elementwise over a."""
    a = np.asarray(a, dtype=np.float64)
    total = np.zeros_like(a)
    for b in bumps:
        total = total + b.height * np.exp(-((a - b.center) ** 2) / (2.0 * b.width**2))
    return total


def log_normal_pdf(a, mu, sigma):
    a = np.asarray(a, dtype=np.float64)
    return -0.5 * ((a - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2.0 * math.pi)


def expected_reward(mu: float, sigma: float, bumps) -> float:
    """E_{N(mu, sigma^2)}[r] = sum_k h_k w_k / sqrt(v_k) exp(-(mu - c_k)^2 / (2 v_k)), v_k = w_k^2 + sigma^2."""
    total = 0.0
    for b in bumps:
        v = b.width**2 + sigma**2
        total += b.height * b.width / math.sqrt(v) * math.exp(-((mu - b.center) ** 2) / (2.0 * v))
    return total


def expected_reward_grad(mu: float, log_sigma: float, bumps) -> tuple[float, float]:
    """Gradient of E[r] with respect to (mu, s = log sigma).

    Per bump f = h w / sqrt(v) exp(-(mu - c)^2 / (2 v)):
    df/dmu = -f (mu - c) / v;  df/ds = sigma df/dsigma = f sigma^2 ((mu - c)^2 / v^2 - 1 / v).
    """
    sigma = math.exp(log_sigma)
    d_mu = 0.0
    d_s = 0.0
    for b in bumps:
        v = b.width**2 + sigma**2
        d = mu - b.center
        f = b.height * b.width / math.sqrt(v) * math.exp(-(d * d) / (2.0 * v))
        d_mu += -f * d / v
        d_s += f * sigma**2 * (d * d / (v * v) - 1.0 / v)
    return d_mu, d_s


def kl_to_ref(mu: float, sigma: float) -> float:
    """KL(N(mu, sigma^2) || N(0, REF_SIGMA^2)) = log(REF_SIGMA / sigma) + (sigma^2 + mu^2) / (2 REF_SIGMA^2) - 1/2."""
    return math.log(REF_SIGMA / sigma) + (sigma**2 + mu**2) / (2.0 * REF_SIGMA**2) - 0.5


def kl_grad(mu: float, log_sigma: float) -> tuple[float, float]:
    """(dKL/dmu, dKL/ds) = (mu / REF_SIGMA^2, sigma^2 / REF_SIGMA^2 - 1)."""
    sigma = math.exp(log_sigma)
    return mu / REF_SIGMA**2, sigma**2 / REF_SIGMA**2 - 1.0


def objective(mu: float, sigma: float, bumps, beta: float) -> float:
    """J = E[r] - beta KL(pi_theta || pi_ref)."""
    return expected_reward(mu, sigma, bumps) - beta * kl_to_ref(mu, sigma)


def objective_grad(mu: float, log_sigma: float, bumps, beta: float) -> tuple[float, float]:
    r_mu, r_s = expected_reward_grad(mu, log_sigma, bumps)
    k_mu, k_s = kl_grad(mu, log_sigma)
    return r_mu - beta * k_mu, r_s - beta * k_s


def score(a, mu: float, log_sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """grad_theta log pi_theta(a) = ((a - mu) / sigma^2, (a - mu)^2 / sigma^2 - 1)."""
    sigma2 = math.exp(2.0 * log_sigma)
    d = np.asarray(a, dtype=np.float64) - mu
    return d / sigma2, d * d / sigma2 - 1.0


# ---------------------------------------------------------------------------
# The optimum pi* proportional to pi_ref exp(r / beta)
# ---------------------------------------------------------------------------

PI_STAR_GRID = np.linspace(-12.0, 12.0, 4801)  # spacing 0.005, far finer than any bump


@dataclass(frozen=True)
class PiStar:
    mean: float
    std: float
    log_z: float  # log E_{pi_ref}[exp(r / beta)]; J(pi*) = beta * log_z


def pi_star(bumps, beta: float, grid: np.ndarray = PI_STAR_GRID) -> PiStar:
    """Mean, standard deviation and log-partition of pi*, by the trapezoid rule in log space.

    pi*(a) = pi_ref(a) exp(r(a) / beta) / Z. The best value of J over all policies
    (not only Gaussians) is J(pi*) = beta log Z (Rafailov et al., arXiv 2305.18290, eq. 4).
    """
    log_w = log_normal_pdf(grid, 0.0, REF_SIGMA) + reward(grid, bumps) / beta
    top = float(np.max(log_w))
    w = np.exp(log_w - top)
    dx = grid[1] - grid[0]
    trap = np.full_like(grid, dx)
    trap[0] = trap[-1] = dx / 2.0
    z = float(np.sum(w * trap))
    mean = float(np.sum(w * trap * grid)) / z
    var = float(np.sum(w * trap * (grid - mean) ** 2)) / z
    return PiStar(mean=mean, std=math.sqrt(var), log_z=math.log(z) + top)


def pi_star_density(grid, bumps, beta: float) -> np.ndarray:
    star = pi_star(bumps, beta)
    return np.exp(log_normal_pdf(grid, 0.0, REF_SIGMA) + reward(grid, bumps) / beta - star.log_z)


# ---------------------------------------------------------------------------
# The six optimisers. Each returns the path of (mu, log sigma) over steps.
# ---------------------------------------------------------------------------

@dataclass
class Trajectory:
    method: str
    mu: list[float] = field(default_factory=list)
    log_sigma: list[float] = field(default_factory=list)
    objective: list[float] = field(default_factory=list)
    value: list[float] = field(default_factory=list)  # PPO's critic / DRO's V (else empty)
    clip_fraction: list[float] = field(default_factory=list)  # PPO / GRPO, per step

    @property
    def sigma(self) -> list[float]:
        return [math.exp(s) for s in self.log_sigma]

    def record(self, mu: float, log_sigma: float, bumps, beta: float) -> None:
        self.mu.append(mu)
        self.log_sigma.append(log_sigma)
        self.objective.append(objective(mu, math.exp(log_sigma), bumps, beta))


def _clamp_log_sigma(s: float) -> float:
    return min(max(s, LOG_SIGMA_MIN), LOG_SIGMA_MAX)


def run_exact(settings: Settings, stream: Stream | None = None) -> Trajectory:
    """theta <- theta + eta grad J(theta): the full-batch limit every sampled method estimates."""
    bumps, beta, eta = settings.bumps, settings.beta, LEARNING_RATES["exact"] * settings.lr_scale
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    traj = Trajectory("exact")
    traj.record(mu, s, bumps, beta)
    for _ in range(settings.steps):
        g_mu, g_s = objective_grad(mu, s, bumps, beta)
        mu, s = mu + eta * g_mu, _clamp_log_sigma(s + eta * g_s)
        traj.record(mu, s, bumps, beta)
    return traj


def run_pg(settings: Settings, stream: Stream) -> Trajectory:
    """REINFORCE with the batch-mean baseline, fresh samples every step:

    g = (1/N) sum_i (r_i - mean r) grad log pi_theta(a_i) - beta grad KL.
    """
    bumps, beta, eta, n = settings.bumps, settings.beta, LEARNING_RATES["pg"] * settings.lr_scale, settings.n_samples
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    traj = Trajectory("pg")
    traj.record(mu, s, bumps, beta)
    for _ in range(settings.steps):
        a = mu + math.exp(s) * stream.normals(n)
        r = reward(a, bumps)
        adv = r - np.mean(r)
        sc_mu, sc_s = score(a, mu, s)
        k_mu, k_s = kl_grad(mu, s)
        g_mu = float(np.mean(adv * sc_mu)) - beta * k_mu
        g_s = float(np.mean(adv * sc_s)) - beta * k_s
        mu, s = mu + eta * g_mu, _clamp_log_sigma(s + eta * g_s)
        traj.record(mu, s, bumps, beta)
    return traj


def _clipped_epochs(mu, s, a, adv, settings: Settings, eta: float):
    """K epochs of ascent on (1/n) sum_i min(rho_i A_i, clip(rho_i, 1 - eps, 1 + eps) A_i) - beta KL.

    rho_i = pi_theta(a_i) / pi_old(a_i), computed in log space. Where the clip is active
    (``clipped_surrogate``'s side is not 0) the sample's gradient is 0; elsewhere it is
    rho_i A_i grad log pi_theta(a_i). Returns the new (mu, s) and the fraction of
    (sample, epoch) pairs that were clipped.
    """
    old_logp = log_normal_pdf(a, mu, math.exp(s))
    clipped = 0
    for _ in range(settings.epochs):
        logp = log_normal_pdf(a, mu, math.exp(s))
        ratio = np.exp(logp - old_logp)
        _, side = clipped_surrogate(ratio, adv, settings.eps, settings.eps)
        live = (side == 0).astype(np.float64)
        clipped += int(np.sum(side != 0))
        sc_mu, sc_s = score(a, mu, s)
        k_mu, k_s = kl_grad(mu, s)
        weight = live * ratio * adv
        g_mu = float(np.mean(weight * sc_mu)) - settings.beta * k_mu
        g_s = float(np.mean(weight * sc_s)) - settings.beta * k_s
        mu, s = mu + eta * g_mu, _clamp_log_sigma(s + eta * g_s)
    return mu, s, clipped / (settings.epochs * len(a))


def run_ppo(settings: Settings, stream: Stream) -> Trajectory:
    """PPO with a scalar learned value V as the baseline: A_i = r_i - V, K clipped epochs,
    then V <- V + alpha (mean r - V) (a critic of one number: the prompt has one state)."""
    bumps, beta, n = settings.bumps, settings.beta, settings.n_samples
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    value = 0.0
    traj = Trajectory("ppo")
    traj.record(mu, s, bumps, beta)
    traj.value.append(value)
    for _ in range(settings.steps):
        a = mu + math.exp(s) * stream.normals(n)
        r = reward(a, bumps)
        adv = r - value
        mu, s, frac = _clipped_epochs(mu, s, a, adv, settings, LEARNING_RATES["ppo"] * settings.lr_scale)
        value = value + VALUE_LEARNING_RATE * (float(np.mean(r)) - value)
        traj.record(mu, s, bumps, beta)
        traj.value.append(value)
        traj.clip_fraction.append(frac)
    return traj


def run_grpo(settings: Settings, stream: Stream) -> Trajectory:
    """GRPO: G samples, A_i = (r_i - mean r) / (std r + 1e-6) (n - 1 std), K clipped epochs."""
    bumps, beta, g = settings.bumps, settings.beta, settings.group_size
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    traj = Trajectory("grpo")
    traj.record(mu, s, bumps, beta)
    for _ in range(settings.steps):
        a = mu + math.exp(s) * stream.normals(g)
        r = reward(a, bumps)
        adv = group_zscore_advantage(r[None, :], std_ddof=1)[0]
        mu, s, frac = _clipped_epochs(mu, s, a, adv, settings, LEARNING_RATES["grpo"] * settings.lr_scale)
        traj.record(mu, s, bumps, beta)
        traj.clip_fraction.append(frac)
    return traj


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def run_dpo(settings: Settings, stream: Stream) -> Trajectory:
    """DPO on synthetic Bradley-Terry preferences over pairs drawn from pi_ref.

    Per pair: a, b ~ pi_ref; a is preferred with probability sigmoid(r(a) - r(b)).
    h = beta (log pi_theta(a_w)/pi_ref(a_w) - log pi_theta(a_l)/pi_ref(a_l));
    loss -log sigmoid(h); descent step
    theta += eta/beta^2 * mean[sigmoid(-h) beta (grad log pi(a_w) - grad log pi(a_l))].
    With unlimited pairs the minimiser over all policies is pi* (arXiv 2305.18290, sec. 5).
    """
    bumps, beta, n = settings.bumps, settings.beta, settings.n_samples
    eta = LEARNING_RATES["dpo"] * settings.lr_scale / beta**2
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    traj = Trajectory("dpo")
    traj.record(mu, s, bumps, beta)
    for _ in range(settings.steps):
        u = stream.uniforms(5 * n).reshape(n, 5)
        # two normals per pair from uniforms (0, 1) and (2, 3); uniform 4 draws the label
        za = np.sqrt(-2.0 * np.log(1.0 - u[:, 0])) * np.cos(2.0 * np.pi * u[:, 1])
        zb = np.sqrt(-2.0 * np.log(1.0 - u[:, 2])) * np.cos(2.0 * np.pi * u[:, 3])
        x, y = REF_SIGMA * za, REF_SIGMA * zb
        x_wins = u[:, 4] < _sigmoid(reward(x, bumps) - reward(y, bumps))
        win = np.where(x_wins, x, y)
        lose = np.where(x_wins, y, x)
        sigma = math.exp(s)
        log_ratio_w = log_normal_pdf(win, mu, sigma) - log_normal_pdf(win, 0.0, REF_SIGMA)
        log_ratio_l = log_normal_pdf(lose, mu, sigma) - log_normal_pdf(lose, 0.0, REF_SIGMA)
        h = beta * (log_ratio_w - log_ratio_l)
        weight = _sigmoid(-h) * beta
        w_mu, w_s = score(win, mu, s)
        l_mu, l_s = score(lose, mu, s)
        g_mu = float(np.mean(weight * (w_mu - l_mu)))
        g_s = float(np.mean(weight * (w_s - l_s)))
        mu, s = mu + eta * g_mu, _clamp_log_sigma(s + eta * g_s)
        traj.record(mu, s, bumps, beta)
    return traj


def run_dro(settings: Settings, stream: Stream) -> Trajectory:
    """DRO: offline (a, r(a)) with a ~ pi_ref and a learned scalar V, minimising
    (1/2) E[(r - V - beta log pi_theta(a)/pi_ref(a))^2] (arXiv 2405.19107, eq. 4).

    delta_i = r_i - V - beta log-ratio_i; theta += eta/beta^2 * mean(delta beta grad log pi);
    V += alpha mean(delta). Its minimiser over all policies is pi*, with V = beta log Z.
    """
    bumps, beta, n = settings.bumps, settings.beta, settings.n_samples
    eta = LEARNING_RATES["dro"] * settings.lr_scale / beta**2
    mu, s = settings.start_mu, math.log(settings.start_sigma)
    value = 0.0
    traj = Trajectory("dro")
    traj.record(mu, s, bumps, beta)
    traj.value.append(value)
    for _ in range(settings.steps):
        a = REF_SIGMA * stream.normals(n)
        r = reward(a, bumps)
        log_ratio = log_normal_pdf(a, mu, math.exp(s)) - log_normal_pdf(a, 0.0, REF_SIGMA)
        delta = r - value - beta * log_ratio
        sc_mu, sc_s = score(a, mu, s)
        g_mu = float(np.mean(delta * beta * sc_mu))
        g_s = float(np.mean(delta * beta * sc_s))
        mu, s = mu + eta * g_mu, _clamp_log_sigma(s + eta * g_s)
        value = value + VALUE_LEARNING_RATE * float(np.mean(delta))
        traj.record(mu, s, bumps, beta)
        traj.value.append(value)
    return traj


RUNNERS = {
    "exact": run_exact,
    "pg": run_pg,
    "ppo": run_ppo,
    "grpo": run_grpo,
    "dpo": run_dpo,
    "dro": run_dro,
}


def run_method(method: str, settings: Settings, seed: int | None = None) -> Trajectory:
    """One method's trajectory; its random stream is ``stream_seed(seed, method index)``."""
    seed = settings.seed if seed is None else seed
    stream = Stream(stream_seed(seed, METHODS.index(method)))
    return RUNNERS[method](settings, stream)


def run_all(settings: Settings) -> dict[str, Trajectory]:
    return {m: run_method(m, settings) for m in METHODS}


BAND_SEEDS = 8  # the J-over-steps band uses seeds seed, seed + 1, ..., seed + 7


@dataclass
class Band:
    """J(theta_t) over seeds for one method: median, min and max per step."""

    method: str
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray


def objective_band(method: str, settings: Settings, n_seeds: int = BAND_SEEDS) -> Band:
    runs = np.array(
        [run_method(method, settings, seed=settings.seed + k).objective for k in range(n_seeds)]
    )
    return Band(method, np.median(runs, axis=0), runs.min(axis=0), runs.max(axis=0))


# ---------------------------------------------------------------------------
# The surface
# ---------------------------------------------------------------------------

SURFACE_MU = (-4.0, 4.0, 41)  # lo, hi, cells
SURFACE_SIGMA = (0.1, 3.0, 30)


def surface_axes():
    mu_lo, mu_hi, n_mu = SURFACE_MU
    sg_lo, sg_hi, n_sg = SURFACE_SIGMA
    return np.linspace(mu_lo, mu_hi, n_mu), np.linspace(sg_lo, sg_hi, n_sg)


def surface(bumps, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """J on the cell centres of the (mu, sigma) grid: returns (mu, sigma, J) of shape (n_sigma, n_mu)."""
    mus, sigmas = surface_axes()
    values = np.array([[objective(m, sg, bumps, beta) for m in mus] for sg in sigmas])
    mu_grid, sigma_grid = np.meshgrid(mus, sigmas)
    return mu_grid, sigma_grid, values


def best_gaussian(bumps, beta: float, n_mu: int = 201, n_sigma: int = 160) -> tuple[float, float, float]:
    """(mu, sigma, J) of the best Gaussian on a fine grid: the global peak of the surface."""
    mus = np.linspace(-5.0, 5.0, n_mu)
    sigmas = np.linspace(math.exp(LOG_SIGMA_MIN), 4.0, n_sigma)
    values = np.array([[objective(m, s, bumps, beta) for m in mus] for s in sigmas])
    i, j = np.unravel_index(int(np.argmax(values)), values.shape)
    return float(mus[j]), float(sigmas[i]), float(values[i, j])


# ---------------------------------------------------------------------------
# What the browser port needs (written into the page as JSON)
# ---------------------------------------------------------------------------

def js_config() -> dict:
    """Constants for playgrounds-sim.js, so they exist only here."""
    grid = PI_STAR_GRID
    return {
        "refSigma": REF_SIGMA,
        "startMu": START_MU,
        "startSigma": START_SIGMA,
        "logSigmaMin": LOG_SIGMA_MIN,
        "logSigmaMax": LOG_SIGMA_MAX,
        "methods": list(METHODS),
        "methodLabels": dict(METHOD_LABELS),
        "learningRates": dict(LEARNING_RATES),
        "valueLearningRate": VALUE_LEARNING_RATE,
        "piStarGrid": [float(grid[0]), float(grid[-1]), int(grid.size)],
        "surfaceMu": list(SURFACE_MU),
        "surfaceSigma": list(SURFACE_SIGMA),
        "bandSeeds": BAND_SEEDS,
        "presets": {
            key: {
                "label": p.label,
                "bumps": [{"height": b.height, "center": b.center, "width": b.width} for b in p.bumps],
            }
            for key, p in PRESETS.items()
        },
    }


def settings_as_js(settings: Settings) -> dict:
    return {
        "preset": settings.preset,
        "beta": settings.beta,
        "nSamples": settings.n_samples,
        "groupSize": settings.group_size,
        "eps": settings.eps,
        "steps": settings.steps,
        "seed": settings.seed,
        "epochs": settings.epochs,
        "lrScale": settings.lr_scale,
        "startMu": settings.start_mu,
        "startSigma": settings.start_sigma,
    }
