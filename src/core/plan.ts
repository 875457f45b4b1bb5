/**
 * Where a request may go, as the route stage plans it: candidate groups (the route's targets, then each step of its
 * fallback chain), the routing policy, the route's name and the price the route carries for models the catalogue
 * does not know.
 */
import type { PriceConfig, RoutingPolicy } from './config.js';
import type { Target } from './provider.js';

/** One concrete place a request can go, with its share of the route's weight. */
export interface Candidate {
  target: Target;
  weight: number;
  label: string;
  /** `<provider>/<model>#<key id>`: where its health and breaker are kept. */
  id: string;
}

/**
 * The places one request may go, in order of preference: the first group holds the route's weighted targets
 * (one candidate per target and provider key); each later group is one step of the fallback chain.
 */
export interface CandidateGroup {
  /** The route the group stands for, or the `<provider>/<model>` of a direct name. */
  name: string;
  candidates: Candidate[];
}

export interface Plan {
  groups: CandidateGroup[];
  policy: RoutingPolicy;
  /** The route the request's model (or a routing rule) named, or null for a direct model name. */
  route: string | null;
  /** The route's own price, used for models the catalogue does not price. */
  price: PriceConfig | null;
}
