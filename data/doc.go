// Package data feeds examples to a training loop, as torch.utils.data's
// core does: a Dataset is a sized collection of examples, each a few
// tensors (an input and its label); TensorDataset makes one of tensors
// whose first dimension counts the examples, Subset and RandomSplit take
// parts of one, and a Loader walks one in batches, in order or shuffled
// by its own seeded generator, stacking each position's tensors on a
// chosen device.
//
// The package is built on lathe's public API alone, as database/sql's
// core knows nothing of any driver: a Dataset of any kind (files read on
// demand, generated examples) plugs in by its two methods, and may offer
// a batch at once (BatchGetter) where it can do better than one example
// at a time.
//
// A Loader is read with a range loop over All, which yields each batch
// and a nil error, or, where a Get or the collate fails, one nil batch
// with the error and stops:
//
//	loader := &data.Loader{Dataset: ds, BatchSize: 32, Shuffle: true, Seed: 1}
//	for batch, err := range loader.All() {
//		if err != nil {
//			return err
//		}
//		x, y := batch[0], batch[1]
//		... // a training step
//		batch.Release()
//	}
//
// The batches are the caller's: each is released when done with (a
// loop that breaks early leaves nothing behind but the batch it holds).
// Every error is a *lathe.Error (its Op names the package's function,
// such as "data.tensor_dataset"), wrapping a cause where there is one.
package data
