/*
 * vkrope: cos and sin in the shader, within 2 ulp of float64 (float32 ulp of
 * the true value), without the built-in sin / cos (whose precision Vulkan
 * leaves loose) and without relying on fused fma (lavapipe does not fuse).
 *
 *   vec2 cos_sin(float a)
 *       (cos a, sin a) for every float32 a. NaN and +-Inf give NaN; sin keeps
 *       the sign of zero; |a| < 2^-12 gives (1, a) bit for bit (denormals too).
 *   vec2 cos_sin_short(float a)
 *       the same for |a| <= 8192 (for larger |a| the result is wrong),
 *       cheaper: Cody-Waite reduction in float pairs (below).
 *       Within 2 ulp on every float32 in [-8192, 8192] (tested exhaustively
 *       by tests/trig_probe.py --sweep-short). The two may differ in the last bit.
 *   vec2 cos_sin_exact(uint position, uvec3 freq_q)
 *       (cos, sin) of position * f, exact angle: f a float64 inverse
 *       frequency, given as freq_q = round(f * 2/pi * 2^94) mod 2^96 (three
 *       words, most significant first; tests/trig_probe.py:freq_quarter_turns
 *       computes it on the host). The angle is off by at most position *
 *       2^-95 quarter turns, so the result is within 2 ulp of cos / sin of
 *       the exact product position * f (tested for positions up to 2^24)
 *       where cos / sin are above about 2^-45; nearer their zeros the error
 *       is that absolute one (under 2^-70 rad below position 2^24).
 *   vec2 cos_sin_exact_fixed(int whole, uint frac, uvec3 freq_q)
 *       the same for the position whole + frac / 2^32 (whole of either sign,
 *       |whole| < 2^31): N-D ids, fractional and negative. The fraction's
 *       product is cut to 2^-94 quarter turns, so the angle is off by at most
 *       |position| * 2^-95 + 2^-94 quarter turns. Needs f < 2 pi: freq_q
 *       holds f modulo one turn, exact times an integer only (the host
 *       refuses larger frequencies).
 *   vec2 cos_sin_exact_hilo(uint position, vec2 inv_freq_hilo)
 *       the same from f as a float32 pair (hi, lo), hi = float(f),
 *       lo = float(f - hi). position * (hi + lo) is reduced exactly (within
 *       2 ulp of its cos / sin), but the pair holds only ~49 of f's 53 bits:
 *       the angle is off by up to position * f * 2^-49 (2^-25 rad at 2^24),
 *       which next to a zero of cos or sin is many ulp (thousands), though
 *       at most ~5e-8 in absolute terms. Prefer cos_sin_exact.
 *
 * Algorithm. Range reduction is done in integers (Payne-Hanek): a float32
 * a = m * 2^e (m a 24-bit integer) times 2/pi is m times a 96-bit window of
 * the bits of 2/pi (TRIG_TWO_OVER_PI, 256 bits), taken modulo 2^96: two
 * umulExtended and one multiply give the quadrant (2 bits) and 94 bits of
 * fraction, with an error below 2^-70 quarter turns, for every float32 (the
 * closest to a multiple of pi/2, 16367173 * 2^72, is 2^-29.2 rad away). Exact
 * mode multiplies the position by freq_q the same way; hilo mode first turns
 * hi and lo into quarter turns with 128-bit windows (error times position
 * below 2^-78), adds them and multiplies by the position. The fraction, rounded
 * to the nearest quadrant (|f| <= 1/2), is normalised, cut into two float32
 * of 24 bits each, and multiplied by pi/2 as a float pair with Dekker's exact
 * product (halves split from the integer bits; no fma): r = rh + rl with
 * |r| <= pi/4 and a relative error near 2^-46. Then minimax polynomials on
 * [-pi/4, pi/4] (coefficients fitted by Lawson iteration, rounded to
 * float32; relative error 2^-28 for sin, 2^-32 for cos):
 *   sin r = rh + (rh z S(z) + rl (1 - z/2)),        z = rh^2, S degree 3
 *   cos r = w + (((1 - w) - z/2) + (z^2 C(z) - rh rl)),  w = 1 - z/2, C degree 2
 * and the quadrant picks (c, s), (-s, c), (-c, -s) or (s, -c).
 * cos_sin_short reduces a - j pi/2 (j = round(a 2/pi) < 2^13) with pi/2 cut
 * into five float32 (four of at most 11 significant bits, so j * Ci is
 * exact; their sum is pi/2 within 2^-78): a - j C1 - j C2 is exact, the
 * next two terms are subtracted with exact two-sums and the last rounded,
 * which leaves r = rh + rl within 2^-42.9 relative (2^-48 absolute at
 * most; emulated on every float32 in [2^-12, 8192]), the error shrinking
 * with |r|, so even the float32 closest to a multiple of pi/2 below 8192
 * (252.898..., 2^-27.8 away) is reduced to float32 precision; then the
 * same polynomials.
 * Every float operation is `precise` (no contraction, no reassociation).
 */
#ifndef VKROPE_TRIG_GLSL
#define VKROPE_TRIG_GLSL

// pi/2 = TRIG_PIO2 + TRIG_PIO2_LO; TRIG_PIO2 = TRIG_PIO2_1 + TRIG_PIO2_0, 12 significant bits each.
const float TRIG_PIO2 = 1.57079637f;      // 0x3FC90FDB
const float TRIG_PIO2_LO = -4.37113883e-08f;  // 0xB33BBD2E
const float TRIG_PIO2_1 = 1.5703125f;     // 0x3FC90000
const float TRIG_PIO2_0 = 4.83870506e-04f;  // 0x39FDB000

// floor(2/pi * 2^256), most significant word first.
const uint TRIG_TWO_OVER_PI[8] = uint[8](0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u,
                                         0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u);

// Word j (from the least significant, j >= 0) of floor(2/pi * 2^256): 0 for
// j >= 8. A tree of selects on the bits of j, no array indexed per lane
// (lavapipe runs those as per-lane memory accesses, several times slower).
uint trig_2pi_word(int j) {
  uint w01 = (j & 1) != 0 ? TRIG_TWO_OVER_PI[6] : TRIG_TWO_OVER_PI[7];
  uint w23 = (j & 1) != 0 ? TRIG_TWO_OVER_PI[4] : TRIG_TWO_OVER_PI[5];
  uint w45 = (j & 1) != 0 ? TRIG_TWO_OVER_PI[2] : TRIG_TWO_OVER_PI[3];
  uint w67 = (j & 1) != 0 ? TRIG_TWO_OVER_PI[0] : TRIG_TWO_OVER_PI[1];
  uint w03 = (j & 2) != 0 ? w23 : w01;
  uint w47 = (j & 2) != 0 ? w67 : w45;
  uint w = (j & 4) != 0 ? w47 : w03;
  return j < 8 ? w : 0u;
}

// Bits [sh, sh + 32) of floor(2/pi * 2^256), sh >= 0, from words j and j + 1.
uint trig_funnel(uint low, uint high, uint t) {
  return (low >> t) | ((high << 1) << (31u - t));  // t = 0 is fine: no shift by 32
}

// x * 2^32 words: (x0, x1, x2) most significant first, times m, modulo 2^96.
uvec3 trig_mul96(uint m, uvec3 x) {
  uint h2, l2, h1, l1, c;
  umulExtended(m, x.z, h2, l2);
  umulExtended(m, x.y, h1, l1);
  uint r1 = uaddCarry(l1, h2, c);
  return uvec3(m * x.x + h1 + c, r1, l2);
}

// The same with four words.
uvec4 trig_mul128(uint m, uvec4 x) {
  uint h3, l3, h2, l2, h1, l1, c1, c2, c3;
  umulExtended(m, x.w, h3, l3);
  umulExtended(m, x.z, h2, l2);
  umulExtended(m, x.y, h1, l1);
  uint r2 = uaddCarry(l2, h3, c1);
  uint r1 = uaddCarry(l1, h2, c2);
  r1 = uaddCarry(r1, c1, c3);
  return uvec4(m * x.x + h1 + c2 + c3, r1, r2, l3);
}

uvec4 trig_add128(uvec4 a, uvec4 b) {
  uint c3, c2, c2b, c1, c1b;
  uint w = uaddCarry(a.w, b.w, c3);
  uint z = uaddCarry(a.z, b.z, c2);
  z = uaddCarry(z, c3, c2b);
  uint y = uaddCarry(a.y, b.y, c1);
  y = uaddCarry(y, c2 + c2b, c1b);
  return uvec4(a.x + b.x + c1 + c1b, y, z, w);
}

uvec4 trig_neg128(uvec4 a) {
  return trig_add128(~a, uvec4(0u, 0u, 0u, 1u));
}

// (m, e) with |x| = m * 2^e, m < 2^24 (m = 0 for zero); finite x only.
uint trig_mantissa(float x, out int e) {
  uint bits = floatBitsToUint(x);
  uint ex = (bits >> 23) & 0xFFu;
  uint m = bits & 0x7FFFFFu;
  e = int(max(ex, 1u)) - 150;
  return ex == 0u ? m : (m | 0x800000u);
}

// |x| * 2/pi modulo 4 in units of 2^-94 quarter turns (three words, most
// significant first), for finite x; error below 2^-70 quarter turns.
uvec3 trig_quarter_turns(float x) {
  int e;
  uint m = trig_mantissa(x, e);
  int sh = 162 - e;  // floor(2/pi * 2^(94+e)) = floor(2/pi * 2^256) >> sh, sh in [58, 311]
  int j = sh >> 5;
  uint t = uint(sh & 31);
  uint w0 = trig_2pi_word(j), w1 = trig_2pi_word(j + 1), w2 = trig_2pi_word(j + 2), w3 = trig_2pi_word(j + 3);
  return trig_mul96(m, uvec3(trig_funnel(w2, w3, t), trig_funnel(w1, w2, t), trig_funnel(w0, w1, t)));
}

// The same for x of either sign, in units of 2^-126 (four words), modulo 4.
uvec4 trig_quarter_turns128(float x) {
  int e;
  uint m = trig_mantissa(x, e);
  int sh = 130 - e;  // in [26, 279]
  int j = sh >> 5;
  uint t = uint(sh & 31);
  uint w0 = trig_2pi_word(j), w1 = trig_2pi_word(j + 1), w2 = trig_2pi_word(j + 2), w3 = trig_2pi_word(j + 3),
       w4 = trig_2pi_word(j + 4);
  uvec4 r = trig_mul128(m, uvec4(trig_funnel(w3, w4, t), trig_funnel(w2, w3, t), trig_funnel(w1, w2, t),
                                 trig_funnel(w0, w1, t)));
  return x < 0.0 ? trig_neg128(r) : r;
}

// (cos, sin) of r = rh + rl (|r| <= pi/4 and a bit, |rl| <= ulp(rh)) plus q quarter turns.
vec2 trig_kernel(float rh, float rl, uint q) {
  precise float z = rh * rh;
  precise float sp = -0.000198393129f + z * 2.71812155e-06f;
  sp = 0.00833332911f + z * sp;
  sp = -0.166666672f + z * sp;
  precise float s = rh + ((rh * z) * sp + rl * (1.0f - 0.5f * z));
  precise float cp = -0.00138873165f + z * 2.4433155e-05f;
  cp = 0.0416666456f + z * cp;
  precise float hz = 0.5f * z;
  precise float w = 1.0f - hz;
  precise float c = w + (((1.0f - w) - hz) + ((z * z) * cp - rh * rl));
  q &= 3u;
  vec2 cs = (q & 1u) != 0u ? vec2(-s, c) : vec2(c, s);
  return q >= 2u ? -cs : cs;
}

// (R / 2^94) quarter turns, R three words (most significant first) modulo 2^96,
// as q quarter turns plus r = rh + rl radians, |r| <= pi/4.
void trig_reduce(uvec3 R, out float rh, out float rl, out uint q) {
  q = (R.x + (1u << 29)) >> 30;  // nearest quadrant
  // The fraction as a signed 96-bit number in units of 2^-96, |f| <= 2^95.
  uint s0 = (R.x << 2) | (R.y >> 30), s1 = (R.y << 2) | (R.z >> 30), s2 = R.z << 2;
  bool neg = (s0 >> 31) != 0u;
  uint c2, c1;
  uint n2 = uaddCarry(~s2, 1u, c2);
  uint n1 = uaddCarry(~s1, c2, c1);
  uint n0 = ~s0 + c1;
  if (neg) {
    s0 = n0;
    s1 = n1;
    s2 = n2;
  }
  // Normalise: the top set bit to bit 31 of s0, shift counted in sh.
  int sh = 0;
  if (s0 == 0u) {
    s0 = s1;
    s1 = s2;
    s2 = 0u;
    sh = 32;
    if (s0 == 0u) {
      s0 = s1;
      s1 = 0u;
      sh = 64;
    }
  }
  uint lz = uint(31 - findMSB(s0));  // findMSB(0) = -1: lz = 32, only where the fraction is 0
  lz = min(lz, 31u);
  uint h = (s0 << lz) | ((s1 >> 1) >> (31u - lz));
  uint l = (s1 << lz) | ((s2 >> 1) >> (31u - lz));
  sh += int(lz);
  // f = (hi24 * 2^-24 + lo24 * 2^-48) * 2^-sh, each part exact in float32.
  uint hi24 = h >> 8;
  uint lo24 = ((h & 0xFFu) << 16) | (l >> 16);
  float scale = uintBitsToFloat(uint(103 - sh) << 23);  // 2^(-24 - sh), sh <= 95: normal
  precise float fh = float(hi24) * scale;
  precise float fh1 = float(hi24 & 0xFFF000u) * scale;
  precise float fh0 = float(hi24 & 0xFFFu) * scale;
  precise float fl = (float(lo24) * 5.9604644775390625e-08f) * scale;
  // r = f * pi/2 as a float pair: Dekker's product fh * TRIG_PIO2 exactly, the rest rounded.
  precise float p = fh * TRIG_PIO2;
  precise float err = ((fh1 * TRIG_PIO2_1 - p) + fh1 * TRIG_PIO2_0 + fh0 * TRIG_PIO2_1) + fh0 * TRIG_PIO2_0;
  precise float tail = err + (fh * TRIG_PIO2_LO + fl * TRIG_PIO2);
  precise float sum = p + tail;
  precise float err2 = tail - (sum - p);
  rh = neg ? -sum : sum;
  rl = neg ? -err2 : err2;
}

vec2 trig_cos_sin_quarters(uvec3 R) {
  float rh, rl;
  uint q;
  trig_reduce(R, rh, rl, q);
  return trig_kernel(rh, rl, q);
}

vec2 cos_sin(float a) {
  float ax = abs(a);
  // Reduced argument: a itself up to pi/4, else the integer reduction.
  float rh, rl;
  uint q;
  trig_reduce(trig_quarter_turns(ax), rh, rl, q);
  bool direct = ax <= 0.785398185f;
  vec2 cs = trig_kernel(direct ? ax : rh, direct ? 0.0f : rl, direct ? 0u : q);
  cs = ax < 0.000244140625f ? vec2(1.0f, ax) : cs;  // sin a = a, cos a = 1 to float32 precision
  // sin is odd: flip the sign bit (keeps -0 and denormals exact).
  cs.y = uintBitsToFloat(floatBitsToUint(cs.y) ^ (floatBitsToUint(a) & 0x80000000u));
  // NaN and +-Inf (tested on the bits: no compiler may assume them away).
  return (floatBitsToUint(a) & 0x7F800000u) == 0x7F800000u ? vec2(uintBitsToFloat(0x7FC00000u)) : cs;
}

vec2 cos_sin_exact(uint position, uvec3 freq_q) {
  return trig_cos_sin_quarters(trig_mul96(position, freq_q));
}

vec2 cos_sin_exact_fixed(int whole, uint frac, uvec3 freq_q) {
  // |whole| * f in quarter turns, negated modulo 2^96 for a negative whole;
  // plus frac * f: the 128-bit product frac * freq_q, shifted down 32 bits.
  uvec3 w = trig_mul96(uint(abs(whole)), freq_q);
  uvec4 w4 = uvec4(0u, w);
  if (whole < 0) {
    w4 = trig_neg128(w4);
  }
  uvec4 f = trig_mul128(frac, uvec4(0u, freq_q));
  return trig_cos_sin_quarters(trig_add128(w4, uvec4(0u, f.xyz)).yzw);
}

vec2 cos_sin_exact_hilo(uint position, vec2 inv_freq_hilo) {
  uvec4 g = trig_add128(trig_quarter_turns128(inv_freq_hilo.x), trig_quarter_turns128(inv_freq_hilo.y));
  return trig_cos_sin_quarters(trig_mul128(position, g).xyz);
}

// pi/2 = TRIG_C1 + ... + TRIG_C5 within 2^-78; C1..C4 have at most 11
// significant bits, so j * Ci is exact for integers j < 2^13.
const float TRIG_C1 = 1.5703125f;         // 0x3FC90000
const float TRIG_C2 = 4.83751297e-04f;    // 0x39FDA000
const float TRIG_C3 = 7.54953362e-08f;    // 0x33A22000
const float TRIG_C4 = 2.56328292e-12f;    // 0x2C346000
const float TRIG_C5 = 6.12323426e-17f;    // 0x248D3132

// (s, e) with s + e = a + b exactly (Knuth's two-sum).
vec2 trig_two_sum(float a, float b) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  return vec2(s, e);
}

vec2 cos_sin_short(float a) {
  float ax = abs(a);
  precise float j = floor(ax * 0.636619747f + 0.5f);  // nearest quadrant, or one off next to a half
  precise float r2 = (ax - j * TRIG_C1) - j * TRIG_C2;  // exact: |r2| < 1 on a grid of 2^-24
  vec2 t3 = trig_two_sum(r2, -(j * TRIG_C3));
  vec2 t4 = trig_two_sum(t3.x, -(j * TRIG_C4));
  precise float tail = (t3.y + t4.y) - j * TRIG_C5;
  precise float rh = t4.x + tail;
  precise float rl = tail - (rh - t4.x);
  vec2 cs = trig_kernel(rh, rl, uint(j));
  cs = ax < 0.000244140625f ? vec2(1.0f, ax) : cs;  // sin a = a, cos a = 1 to float32 precision
  cs.y = uintBitsToFloat(floatBitsToUint(cs.y) ^ (floatBitsToUint(a) & 0x80000000u));
  return cs;
}

#endif
