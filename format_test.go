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
	const ones = `tensor([[1., 1., 1., ..., 1., 1., 1.],
        [1., 1., 1., ..., 1., 1., 1.],
        [1., 1., 1., ..., 1., 1., 1.],
        ...,
        [1., 1., 1., ..., 1., 1., 1.],
        [1., 1., 1., ..., 1., 1., 1.],
        [1., 1., 1., ..., 1., 1., 1.]]`
	for _, dev := range Devices() {
		suffix := ")"
		if dev != CPU {
			suffix = ", device='" + dev.String() + "')"
		}
		if got := Ones(dev, Float32, 1, 1).Expand(1e6, 1e6).String(); got != ones+suffix {
			t.Errorf("%v: expanded 1e6×1e6 prints\n%s\nwant\n%s", dev, got, ones+suffix)
		}
	}
	// arange(2000).reshape(40, 50), and its transpose, as they printed
	// when the whole tensor was read back.
	x := Arange(CPU, Float32, 0, 2000, 1).Reshape(40, 50)
	const want = `tensor([[   0.,    1.,    2., ...,   47.,   48.,   49.],
        [  50.,   51.,   52., ...,   97.,   98.,   99.],
        [ 100.,  101.,  102., ...,  147.,  148.,  149.],
        ...,
        [1850., 1851., 1852., ..., 1897., 1898., 1899.],
        [1900., 1901., 1902., ..., 1947., 1948., 1949.],
        [1950., 1951., 1952., ..., 1997., 1998., 1999.]])`
	if got := x.String(); got != want {
		t.Errorf("arange(2000).reshape(40, 50) prints\n%s\nwant\n%s", got, want)
	}
	const wantT = `tensor([[   0.,   50.,  100., ..., 1850., 1900., 1950.],
        [   1.,   51.,  101., ..., 1851., 1901., 1951.],
        [   2.,   52.,  102., ..., 1852., 1902., 1952.],
        ...,
        [  47.,   97.,  147., ..., 1897., 1947., 1997.],
        [  48.,   98.,  148., ..., 1898., 1948., 1998.],
        [  49.,   99.,  149., ..., 1899., 1949., 1999.]])`
	if got := x.MT().String(); got != wantT {
		t.Errorf("its transpose prints\n%s\nwant\n%s", got, wantT)
	}
	// One long dim among short ones is cut alone.
	if got := Arange(CPU, Int32, 0, 2002, 1).Reshape(2, 1001).String(); !strings.HasPrefix(got, "tensor([[   0,    1,    2, ...,  998,  999, 1000],\n        [1001,") {
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
			{Arange(dev, Int64, 0, 2000, 1).Add(Full(dev, Int64, 1<<62, 1)), "tensor([4611686018427387904, 4611686018427387905, 4611686018427387906, ..., " +
				"4611686018427389901, 4611686018427389902, 4611686018427389903]"},
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
	// torch.ones(8, 8, 20), but for the one space (torch's two) before
	// the "..." in a row.
	const want = `
tensor([[[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]],

        [[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]],

        [[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]],

        ...,

        [[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]],

        [[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]],

        [[1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         ...,
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.],
         [1., 1., 1., ..., 1., 1., 1.]]])`
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
		const want = `tensor([[[[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]],

         [[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]],

         [[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]],

         ...,

         [[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]],

         [[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]],

         [[0., 0., 0., ..., 0., 0., 0.],
          [1., 1., 1., ..., 1., 1., 1.]]],


        [[[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]],

         [[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]],

         [[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]],

         ...,

         [[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]],

         [[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]],

         [[2., 2., 2., ..., 2., 2., 2.],
          [3., 3., 3., ..., 3., 3., 3.]]]]`
		before, err := MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := x.String(); got != want+suffix {
			t.Errorf("%v: expanded [2, 2³⁰, 2, 2³⁰] prints\n%s\nwant\n%s", dev, got, want+suffix)
		}
		if after, _ := MemoryStats(dev); after.Allocated != before.Allocated {
			t.Errorf("%v: String left %d bytes allocated", dev, after.Allocated-before.Allocated)
		}
	}
}
