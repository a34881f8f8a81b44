package lathe

import (
	"math"
	"strings"
	"testing"
)

// TestStringEmpty: an empty tensor prints as torch prints one, at once,
// whatever its other sizes ([2³², 2³², 0] hung, [100000, 0] printed
// 1.2 MB of brackets).
func TestStringEmpty(t *testing.T) {
	for _, c := range []struct {
		x    *Tensor
		want string
	}{
		{Zeros(CPU, Float32, 0), "tensor([])"},
		{Zeros(CPU, Float32, 2, 0), "tensor([], size=(2, 0))"},
		{Zeros(CPU, Float32, 100000, 0), "tensor([], size=(100000, 0))"},
		{Zeros(CPU, Float32, 1<<32, 1<<32, 0), "tensor([], size=(4294967296, 4294967296, 0))"},
		{Zeros(CPU, Int32, 0, 3), "tensor([], size=(0, 3), dtype=int32)"},
		{Ones(CPU, Float32, 3, 4).Narrow(1, 4, 0), "tensor([], size=(3, 0))"},
	} {
		if got := c.x.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

// TestStringSummary: past 1000 elements String prints the first and last
// three of each long dim, as torch does, and reads only those from the
// device (torch's get_summarized_data): an expanded 10⁶×10⁶ tensor, which no memory holds whole, prints
// like any other.
func TestStringSummary(t *testing.T) {
	const ones = `tensor([[1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        ...,
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.]]`
	for _, dev := range Devices() {
		suffix := ")"
		if dev != CPU {
			suffix = ", device='" + dev.String() + "')"
		}
		if got := Ones(dev, Float32, 1, 1).Expand(1e6, 1e6).String(); got != ones+suffix {
			t.Errorf("%v: expanded 1e6×1e6 prints\n%s\nwant\n%s", dev, got, ones+suffix)
		}
	}
	// arange(2000).reshape(40, 50), and its transpose, as torch prints
	// them: whole numbers spanning more than 1000 times are scientific,
	// and the rows wrap at 80 columns.
	x := Arange(CPU, Float32, 0, 2000, 1).Reshape(40, 50)
	const want = `tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,
         4.9000e+01],
        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,
         9.9000e+01],
        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,
         1.4900e+02],
        ...,
        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,
         1.8990e+03],
        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,
         1.9490e+03],
        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,
         1.9990e+03]])`
	if got := x.String(); got != want {
		t.Errorf("arange(2000).reshape(40, 50) prints\n%s\nwant\n%s", got, want)
	}
	const wantT = `tensor([[0.0000e+00, 5.0000e+01, 1.0000e+02,  ..., 1.8500e+03, 1.9000e+03,
         1.9500e+03],
        [1.0000e+00, 5.1000e+01, 1.0100e+02,  ..., 1.8510e+03, 1.9010e+03,
         1.9510e+03],
        [2.0000e+00, 5.2000e+01, 1.0200e+02,  ..., 1.8520e+03, 1.9020e+03,
         1.9520e+03],
        ...,
        [4.7000e+01, 9.7000e+01, 1.4700e+02,  ..., 1.8970e+03, 1.9470e+03,
         1.9970e+03],
        [4.8000e+01, 9.8000e+01, 1.4800e+02,  ..., 1.8980e+03, 1.9480e+03,
         1.9980e+03],
        [4.9000e+01, 9.9000e+01, 1.4900e+02,  ..., 1.8990e+03, 1.9490e+03,
         1.9990e+03]])`
	if got := x.MT().String(); got != wantT {
		t.Errorf("its transpose prints\n%s\nwant\n%s", got, wantT)
	}
	// One long dim among short ones is cut alone.
	if got := Arange(CPU, Int32, 0, 2002, 1).Reshape(2, 1001).String(); !strings.HasPrefix(got, "tensor([[   0,    1,    2,  ...,  998,  999, 1000],\n        [1001,") {
		t.Errorf("arange(2002).reshape(2, 1001) prints\n%s", got)
	}
}

// TestStringInt64Exact: an int64 prints its own value, as torch's does;
// widened to float64 for printing, 2⁵³+1 printed as 2⁵³ and 2⁶³-1 as
// -2⁶³.
func TestStringInt64Exact(t *testing.T) {
	for _, dev := range Devices() {
		suffix := ")"
		if dev != CPU {
			suffix = ", device='" + dev.String() + "')"
		}
		for _, c := range []struct {
			x    *Tensor
			want string
		}{
			{FromSlice(dev, []int64{9007199254740993, -9007199254740993}), "tensor([ 9007199254740993, -9007199254740993]"},
			{FromSlice(dev, []int64{math.MaxInt64, math.MinInt64}), "tensor([ 9223372036854775807, -9223372036854775808]"},
			{Scalar(dev, int64(math.MaxInt64)), "tensor(9223372036854775807"},
			{Arange(dev, Int64, 0, 2000, 1).Add(Full(dev, Int64, 1<<62, 1)), "tensor([4611686018427387904, 4611686018427387905, 4611686018427387906,\n" +
				"         ..., 4611686018427389901, 4611686018427389902,\n        4611686018427389903]"},
		} {
			if got := c.x.String(); got != c.want+suffix {
				t.Errorf("%v: String() = %q, want %q", dev, got, c.want+suffix)
			}
		}
	}
}

// TestStringSummaryBlankLines: the "..." that stands for the middle
// entries of a dim is followed by the blank lines that follow each entry
// of that dim, as torch prints it: in a 3-D tensor, one after the "..."
// between matrices, where it had none.
func TestStringSummaryBlankLines(t *testing.T) {
	// torch.ones(8, 8, 20).
	const want = `
tensor([[[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]],

        [[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]],

        [[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]],

        ...,

        [[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]],

        [[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]],

        [[1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         ...,
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.],
         [1., 1., 1.,  ..., 1., 1., 1.]]])`
	if got := Ones(CPU, Float32, 8, 8, 20).String(); "\n"+got != want {
		t.Errorf("ones(8, 8, 20) prints\n%s\nwant\n%s", got, want)
	}
}

// TestStringSummaryHuge: a summarised tensor is cut in every dim before
// its parts are joined, so that printing an expanded 2³⁰×2³⁰ tensor reads
// 36 elements; joining the first dim's head and tail first copied six
// whole rows, 24 GiB, and printed an out-of-memory error.
func TestStringSummaryHuge(t *testing.T) {
	for _, dev := range Devices() {
		suffix := ")"
		if dev != CPU {
			suffix = ", device='" + dev.String() + "')"
		}
		x := Arange(dev, Float32, 0, 4, 1).Reshape(2, 1, 2, 1).Expand(2, 1<<29, 2, 1<<30)
		const want = `tensor([[[[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]],

         [[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]],

         [[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]],

         ...,

         [[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]],

         [[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]],

         [[0., 0., 0.,  ..., 0., 0., 0.],
          [1., 1., 1.,  ..., 1., 1., 1.]]],


        [[[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]],

         [[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]],

         [[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]],

         ...,

         [[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]],

         [[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]],

         [[2., 2., 2.,  ..., 2., 2., 2.],
          [3., 3., 3.,  ..., 3., 3., 3.]]]]`
		before, err := MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := x.String(); got != want+suffix {
			t.Errorf("%v: expanded [2, 2³⁰, 2, 2³⁰] prints\n%s\nwant\n%s", dev, got, want+suffix)
		}
		if after, _ := MemoryStats(dev); after.Allocated > before.Allocated { // less is no leak: a collected tensor's cleanup
			t.Errorf("%v: String left %d bytes allocated", dev, after.Allocated-before.Allocated)
		}
	}
}
