package lathe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// orthoPolyCase is a row of orthoPolyTable: op's degree-n polynomial's
// derivative of order m at x, exactly (rounded), and its scale: the sum
// of the derivative's terms' magnitudes at x, or a bound of the value
// where a closed form computes it.
type orthoPolyCase struct {
	op           string
	n, m         int
	x, want, scl float64
}

var orthoPolyMethods = map[string]func(*Tensor, int) *Tensor{
	"special_chebyshev_polynomial_t":         (*Tensor).ChebyshevPolynomialT,
	"special_chebyshev_polynomial_u":         (*Tensor).ChebyshevPolynomialU,
	"special_chebyshev_polynomial_v":         (*Tensor).ChebyshevPolynomialV,
	"special_chebyshev_polynomial_w":         (*Tensor).ChebyshevPolynomialW,
	"special_shifted_chebyshev_polynomial_t": (*Tensor).ShiftedChebyshevPolynomialT,
	"special_shifted_chebyshev_polynomial_u": (*Tensor).ShiftedChebyshevPolynomialU,
	"special_shifted_chebyshev_polynomial_v": (*Tensor).ShiftedChebyshevPolynomialV,
	"special_shifted_chebyshev_polynomial_w": (*Tensor).ShiftedChebyshevPolynomialW,
	"special_hermite_polynomial_h":           (*Tensor).HermitePolynomialH,
	"special_hermite_polynomial_he":          (*Tensor).HermitePolynomialHe,
	"special_laguerre_polynomial_l":          (*Tensor).LaguerrePolynomialL,
	"special_legendre_polynomial_p":          (*Tensor).LegendrePolynomialP,
}

// polyDerivative is f's degree-n polynomial's m-th derivative at x, by
// the gradient taken m times (each with CreateGraph, so that the next can
// differentiate it).
func polyDerivative(f func(*Tensor, int) *Tensor, x *Tensor, n, m int) (*Tensor, error) {
	x = x.Detach().RequireGrad()
	y := f(x, n)
	for k := 0; k < m; k++ {
		g, err := Grad(y.Sum(), []*Tensor{x}, CreateGraph())
		if err != nil {
			return nil, err
		}
		y = g[0]
	}
	return y, y.Err()
}

// TestOrthoPolyExact checks the twelve polynomials and their first three
// derivatives against exact values (build/orthopoly/ref.py) on every
// device, in float64 where the device has it and float32: each family's
// recurrence at degrees to 30, the Chebyshev kinds' closed forms (cos
// inside [-1, 1] at degrees to 1000, cosh outside it), Legendre's at
// degree 4000, the endpoints, and the shifted kinds at 2x - 1. An error
// is measured against the value's scale (build/orthopoly/ref.py): a
// recurrence in floating point loses a few of its last bits each step,
// of the terms' magnitudes, not of the value's.
func TestOrthoPolyExact(t *testing.T) {
	type group struct {
		op   string
		n, m int
	}
	groups := map[group][]orthoPolyCase{}
	var order []group
	for _, c := range orthoPolyTable {
		g := group{c.op, c.n, c.m}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], c)
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, dt := range []DType{Float64, Float32} {
				worst, worstAt := 0.0, ""
				for _, g := range order {
					cs := groups[g]
					xs := make([]float64, len(cs))
					for i, c := range cs {
						xs[i] = c.x
					}
					x := FromSlice(CPU, xs).Cast(dt).To(dev)
					if x.Err() != nil {
						if dt == Float64 {
							break // wgpu has no float64
						}
						t.Fatal(x.Err())
					}
					y, err := polyDerivative(orthoPolyMethods[g.op], x, g.n, g.m)
					if err != nil {
						t.Fatalf("%v %s(n=%d) derivative %d: %v", dt, g.op, g.n, g.m, err)
					}
					got, err := y.To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					eps := 0x1p-52
					if dt == Float32 {
						eps = 0x1p-23
					}
					for i, c := range cs {
						w := c.want
						if dt == Float32 && math.Abs(w) > math.MaxFloat32 {
							w = math.Inf(int(math.Copysign(1, w)))
						}
						if got[i] == w {
							continue
						}
						err := math.Abs(got[i]-w) / (eps * float64(c.n+1) * (math.Abs(w) + c.scl + 1))
						if math.IsNaN(err) || err > worst {
							worst, worstAt = err, fmt.Sprintf("%s(n=%d) derivative %d at %v = %v, want %v", c.op, c.n, c.m, c.x, got[i], w)
						}
						if !(err <= 8) {
							t.Errorf("%v %s(n=%d) derivative %d at %v = %v, want %v (%.2g of eps·(n+1)·(|want| + %.3g + 1))",
								dt, c.op, c.n, c.m, c.x, got[i], w, err, c.scl)
						}
					}
				}
				t.Logf("%v: worst %.3g eps·(n+1)·(|want| + scale): %s", dt, worst, worstAt)
			}
		})
	}
}

// TestOrthoPolyHostile: the polynomials at the edges of their domain, on
// every device. A degree past 65536 is ErrValue where the value takes the
// recurrence, and any degree works for the Chebyshev kinds' values (not
// their derivatives, ErrGrad); a negative degree is 0 and degree 0 is 1,
// at NaN too; ±Inf gives ±Inf with the leading term's sign, and the
// degree's own derivative its constant; integers and bool are promoted to
// float32, the 16-bit floats kept; a ninth derivative is ErrGrad.
func TestOrthoPolyHostile(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float64{-inf, inf, nan, 0.5, -2}).Cast(Float32).To(dev)
			for name, f := range orthoPolyMethods {
				closed := strings.Contains(name, "chebyshev")
				err := f(x, 1<<16+1).Err()
				if closed != (err == nil) || !closed && (!errors.Is(err, ErrValue) || !strings.Contains(err.Error(), "65536")) {
					t.Errorf("%s of degree 65537: %v", name, err)
				}
				for _, c := range []struct {
					n    int
					want []float64
				}{{-5, []float64{0, 0, 0, 0, 0}}, {math.MinInt, []float64{0, 0, 0, 0, 0}}, {0, []float64{1, 1, 1, 1, 1}}} {
					got, err := f(x, c.n).To(CPU).Cast(Float64).Float64s()
					if err != nil || !slices.Equal(got, c.want) {
						t.Errorf("%s of degree %d: %v, %v; want %v", name, c.n, got, err, c.want)
					}
				}
				got, err := f(x, 5).To(CPU).Cast(Float64).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				// degree 5 at -Inf: odd, so the leading term's sign flips
				// (Laguerre's leading coefficient is -1/120, so it flips twice).
				wantLo, wantHi := -inf, inf
				if name == "special_laguerre_polynomial_l" {
					wantLo, wantHi = inf, -inf
				}
				if got[0] != wantLo || got[1] != wantHi || !math.IsNaN(got[2]) {
					t.Errorf("%s of degree 5 at -Inf, Inf, NaN: %v", name, got[:3])
				}
				d, err := polyDerivative(f, x, 2, 2)
				if err != nil {
					t.Fatal(err)
				}
				dv, _ := d.To(CPU).Cast(Float64).Float64s()
				at0, _ := polyDerivative(f, FromSlice(CPU, []float32{0}).To(dev), 2, 2)
				c, _ := at0.To(CPU).Cast(Float64).Float64s()
				if dv[0] != c[0] || dv[1] != c[0] || c[0] == 0 {
					t.Errorf("%s of degree 2, second derivative at ±Inf: %v, want the constant %v", name, dv[:2], c)
				}
				if _, err := polyDerivative(f, x, 12, 9); !errors.Is(err, ErrGrad) {
					t.Errorf("%s: ninth derivative: %v, want ErrGrad", name, err)
				}
				for _, dt := range []DType{Int32, Bool, Float16, BFloat16} {
					y := f(Ones(dev, dt, 2), 3)
					want := dt
					if !dt.IsFloat() {
						want = Float32
					}
					if y.Err() != nil || y.DType() != want {
						t.Errorf("%s of %v: %v %v, want %v", name, dt, y.DType(), y.Err(), want)
					}
				}
			}
			// A Chebyshev value of any degree, by its closed form: T_n(cos θ)
			// = cos(nθ), n = 2^40 at θ = π/3: nθ ≡ 4π/3 mod 2π, as 2^40 ≡ 4 mod 6, and
			// n·acos(0.5) keeps 2^40·ε of the phase.
			big := 1 << 40
			if dev == CPU {
				got, _ := FromSlice(dev, []float64{0.5}).ChebyshevPolynomialT(big).Float64s()
				if math.Abs(got[0]+0.5) > 1e-3 {
					t.Errorf("T_2^40(0.5) = %v, want -0.5", got)
				}
			}
			if _, err := polyDerivative((*Tensor).ChebyshevPolynomialT, x, big, 1); !errors.Is(err, ErrGrad) {
				t.Errorf("derivative of T_2^40: %v, want ErrGrad", err)
			}
		})
	}
}
